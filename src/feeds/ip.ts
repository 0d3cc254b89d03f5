// IPv6 text form check (RFC 4291 §2.2, with an optional embedded IPv4 tail); pure, no Node imports.
const H16 = /^[0-9a-f]{1,4}$/i;
const V4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

export function isIPv6(s: string): boolean {
  if (s.length < 2 || s.length > 45 || !s.includes(':')) return false;
  const halves = s.split('::');
  if (halves.length > 2) return false;
  const groups = (part: string): string[] | null => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return false;
  const all = [...head, ...tail];
  let count = all.length;
  const last = all[all.length - 1];
  if (last !== undefined && last.includes('.')) {
    if (!V4.test(last)) return false;
    all.pop();
    count += 1; // an IPv4 tail takes two groups
  }
  if (!all.every((g) => H16.test(g))) return false;
  return halves.length === 2 ? count <= 7 : count === 8;
}
