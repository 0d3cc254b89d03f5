// In-memory fixed-window rate limiter (docs/edge.md, "Rate limit"). Edge-safe: no Node imports.
//
// Each client identity gets a window that starts with its first request and lasts `windowMs`; the
// window allows `limit` requests. State lives in one process (serve) or one isolate (a Worker): a
// Worker's counters are per isolate, so a client spread over several isolates or locations gets more.
// In the Worker, Cloudflare's rate limiting bindings may decide instead (the handler's `rateLimit`
// option, src/edge/worker.ts); these counters then only feed the RateLimit headers (docs/edge.md).
//
// Memory is bounded: at most `maxIdentities` windows are kept. Windows are kept in a Map in the order
// they started, so expired ones sit at the front and are swept from there; when the map is full of live
// windows, the oldest is dropped (that client starts afresh: the limiter fails open, never closed).

export interface Take {
  /** False when the request exceeds the quota. */
  allowed: boolean;
  limit: number;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Whole seconds until the window ends (at least 1). */
  resetSeconds: number;
}

interface Window {
  start: number;
  count: number;
}

export const DEFAULT_MAX_IDENTITIES = 100_000;

export class FixedWindowLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly windowMs: number,
    private readonly maxIdentities: number = DEFAULT_MAX_IDENTITIES,
  ) {}

  get size(): number {
    return this.windows.size;
  }

  /** Counts one request of `id` against `limit` (a request over the limit is not counted). */
  take(id: string, limit: number, now: number): Take {
    this.sweep(now, 8);
    let w = this.windows.get(id);
    if (!w || now >= w.start + this.windowMs) {
      if (w) this.windows.delete(id); // re-inserted at the end: the map stays ordered by start
      if (this.windows.size >= this.maxIdentities) this.sweep(now, Infinity);
      if (this.windows.size >= this.maxIdentities) {
        const oldest = this.windows.keys().next();
        if (!oldest.done) this.windows.delete(oldest.value);
      }
      w = { start: now, count: 0 };
      this.windows.set(id, w);
    }
    const allowed = w.count < limit;
    if (allowed) w.count++;
    return { allowed, limit, remaining: Math.max(0, limit - w.count), resetSeconds: this.reset(w, now) };
  }

  /** The state of `id` without counting a request and without storing anything. */
  peek(id: string, limit: number, now: number): Take {
    const w = this.windows.get(id);
    if (!w || now >= w.start + this.windowMs) {
      return { allowed: true, limit, remaining: limit, resetSeconds: Math.ceil(this.windowMs / 1000) };
    }
    return { allowed: w.count < limit, limit, remaining: Math.max(0, limit - w.count), resetSeconds: this.reset(w, now) };
  }

  private reset(w: Window, now: number): number {
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  /** Drops up to `max` expired windows from the front (the oldest starts). */
  private sweep(now: number, max: number): void {
    let n = 0;
    for (const [id, w] of this.windows) {
      if (n >= max || now < w.start + this.windowMs) break;
      this.windows.delete(id);
      n++;
    }
  }
}

/**
 * The rate-limit identity of a client address: an IPv4 address as is (also when IPv4-mapped in IPv6),
 * an IPv6 address reduced to its /64 prefix (one subscriber usually holds a whole /64, so counting per
 * address would let one client multiply its quota). Unparseable text is used verbatim.
 */
export function ipIdentity(ip: string): string {
  const addr = ip.trim().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(addr)) return addr;
  const groups = parseIpv6(addr);
  if (!groups) return addr;
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, or null. */
function parseIpv6(s: string): number[] | null {
  if (!/^[0-9A-Fa-f:.]+$/.test(s) || !s.includes(':')) return null;
  let text = s;
  const tail: number[] = [];
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const b = v4.slice(1, 5).map(Number);
    if (b.some((x) => x > 255)) return null;
    tail.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
    text = text.slice(0, v4.index);
    if (!text.endsWith(':')) return null;
    if (!text.endsWith('::')) text = text.slice(0, -1); // "::ffff:" -> "::ffff"; "64:ff9b::" stays
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (!head || !rest) return null;
  const want = 8 - tail.length;
  if (halves.length === 1) {
    if (head.length !== want) return null;
    return [...head, ...tail];
  }
  const fill = want - head.length - rest.length;
  if (fill < 1) return null;
  return [...head, ...new Array<number>(fill).fill(0), ...rest, ...tail];
}
