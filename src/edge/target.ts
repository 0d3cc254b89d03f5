// Validation of the request target before anything touches files (docs/edge.md, "Hostile input").
// Edge-safe: no Node imports.
//
// The rules are deliberately strict: the API's paths and parameters are plain ASCII identifiers, so a
// legitimate client never sends what is rejected here.
// - the target (path and query as sent, percent-encoded) is at most MAX_TARGET_BYTES bytes, else 414;
// - only printable ASCII is allowed raw (no spaces, controls, bytes above 0x7E, no backslash);
// - every `%` starts a valid escape (`%` + two hex digits) and the decoded bytes are valid UTF-8;
// - a decoded path segment holds no `/`, `\`, NUL or control character and is not `.` or `..`;
// - no empty path segment except a trailing one (`/v1//hosts` is rejected, `/v1/hosts/` is not);
// - a decoded query name or value holds no NUL or control character.

/** Longest accepted request target (path + `?` + query), in bytes as sent. Longer: 414. */
export const MAX_TARGET_BYTES = 2048;

export type TargetCheck =
  | { ok: true; path: string; query: string }
  | { ok: false; status: 400 | 414; detail: string };

const HEX = /^[0-9A-Fa-f]{2}$/;

function bad(detail: string): TargetCheck {
  return { ok: false, status: 400, detail };
}

/** True for C0 controls, DEL and C1 controls (U+0080–U+009F). */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/** Percent-decodes `s` strictly: null when an escape is malformed or the bytes are not UTF-8. */
export function strictDecode(s: string): string | null {
  for (let i = s.indexOf('%'); i !== -1; i = s.indexOf('%', i + 1)) {
    if (!HEX.test(s.slice(i + 1, i + 3))) return null;
  }
  try {
    return decodeURIComponent(s);
  } catch {
    return null; // decoded bytes are not valid UTF-8
  }
}

/**
 * Checks a request target: an origin-form `/path?query` (absolute-form `http://host/path` is reduced to
 * its path first). Returns the raw (still percent-encoded) path and query without the `?`.
 */
export function checkTarget(target: string): TargetCheck {
  let t = target;
  const absolute = /^https?:\/\/[^/?#]*/i.exec(t);
  if (absolute) t = t.slice(absolute[0].length) || '/';
  const hash = t.indexOf('#');
  if (hash !== -1) t = t.slice(0, hash);
  // Measured without scheme and host, so a Worker (which sees only the full URL) counts like serve.
  const bytes = new TextEncoder().encode(t).length;
  if (bytes > MAX_TARGET_BYTES) {
    return { ok: false, status: 414, detail: `The request target is ${bytes} bytes long; at most ${MAX_TARGET_BYTES} are accepted.` };
  }
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return bad('The request target holds a space, a control character or a non-ASCII byte; percent-encode it.');
    if (c === 0x5c) return bad('The request target holds a backslash.');
  }
  if (!t.startsWith('/')) return bad('The request path must start with "/".');
  const q = t.indexOf('?');
  const path = q === -1 ? t : t.slice(0, q);
  const query = q === -1 ? '' : t.slice(q + 1);

  const segments = path.split('/').slice(1);
  for (let i = 0; i < segments.length; i++) {
    const raw = segments[i]!;
    if (raw === '') {
      if (i === segments.length - 1) continue; // trailing slash: an ordinary unknown path
      return bad('The request path holds an empty segment ("//").');
    }
    const seg = strictDecode(raw);
    if (seg === null) return bad('The request path holds an invalid percent-encoding.');
    if (seg === '.' || seg === '..') return bad('The request path holds a "." or ".." segment.');
    if (seg.includes('/') || seg.includes('\\')) return bad('A path segment holds an encoded "/" or "\\".');
    if (hasControl(seg)) return bad('The request path holds an encoded NUL or control character.');
  }

  if (query !== '') {
    for (const pair of query.split('&')) {
      for (const part of pair.split('=')) {
        const v = strictDecode(part.replace(/\+/g, ' '));
        if (v === null) return bad('The query string holds an invalid percent-encoding.');
        if (hasControl(v)) return bad('The query string holds an encoded NUL or control character.');
      }
    }
  }
  return { ok: true, path, query };
}

/**
 * True when `p` is a safe snapshot-relative file path: non-empty segments, none `.` or `..`, no leading
 * `/`, no backslash, NUL or control character. Every path handed to a FileReader passes this check.
 */
export function isSafeFilePath(p: string): boolean {
  if (p === '' || p.startsWith('/') || p.includes('\\') || hasControl(p)) return false;
  return p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}
