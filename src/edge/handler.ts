// The edge shim's HTTP layer: Request -> Response over a snapshot's files (docs/architecture.md §5, docs/edge.md).
// Edge-safe: Web-standard Request/Response/Headers/URL/crypto.subtle only; the same code runs in
// `peppol-snapshot serve` (Node) and as a Cloudflare Worker.
//
// Order of work for a request:
//   1. identity: a valid API key, else the client address (IPv6 per /64);
//   2. rate limit (every method but OPTIONS counts; over the limit: 429; an outside limiter, the
//      Worker's rate limiting binding, may decide instead of the in-process counter);
//   3. request target checks (hostile input: 400, overlong: 414) — before any file is touched;
//   4. method: OPTIONS answers the CORS preflight (204), anything but GET/HEAD is 405;
//   5. access (keyed mode: 403 without a valid key of the route's tier);
//   6. /health, /health/db, /openapi.json (regenerated for this policy), the site's files (status page,
//      feed, bulk downloads: as stored, with byte ranges; src/edge/site.ts), else the resolver; then
//      ETag / If-None-Match (304) and HEAD.
// Every response carries Access-Control-Allow-Origin: * and the rate-limit headers.
import { isKeylessPath, matchPathPattern } from '../config/patterns.js';
import { createKeyStore, presentedKey } from './api-keys.js';
import { sha256Etag } from './etag.js';
import { OPENAPI_FILE, OPENAPI_PATH, openApiResponder } from './openapi.js';
import { PROBLEM_CONTENT_TYPE, problemDoc, quotaExceededDoc, type EdgeProblemName, type ProblemDoc } from './problem.js';
import { FixedWindowLimiter, ipIdentity, type Take } from './ratelimit.js';
import { requestedRange, SITE_CACHE_CLASS, siteContentType, siteFileOf } from './site.js';
import { checkTarget, isSafeFilePath } from './target.js';
import type { Answer, CacheClass, EdgePolicy, FileReader, KeyEntry, KeyStore, Resolve, Tier } from './types.js';

export const SERVICE = 'peppol-snapshot';
export const ALLOWED_METHODS = 'GET, HEAD, OPTIONS';
export const PREFLIGHT_ALLOW_HEADERS = 'Authorization, X-API-Key, If-None-Match';
export const EXPOSED_HEADERS = [
  'RateLimit',
  'RateLimit-Policy',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'ETag',
  'Link',
  'Deprecation',
  'Sunset',
].join(', ');

/** Cache-Control per cache class (docs/edge.md, "Caching"). */
export const CACHE_CONTROL: Record<CacheClass, string> = {
  immutable: 'public, max-age=31536000, immutable',
  mutable: 'public, max-age=60, stale-while-revalidate=300',
  meta: 'public, no-cache',
  none: 'no-store',
};

/** /health/db reads the manifest's generated_at at most this often. */
export const HEALTH_CACHE_MS = 10_000;
/** Bytes of manifest.json read to find a leading generated_at. */
const MANIFEST_PREFIX_BYTES = 4096;

const TIER_RANK: Record<Tier, number> = { network: 1, market: 2 };

/** Default of `healthMaxAgeSeconds`: /health/db reports db=false when manifest.json is older. */
export const DEFAULT_HEALTH_MAX_AGE_SECONDS = 2 * 3600;

export interface HandlerOptions {
  files: FileReader;
  resolve: Resolve;
  policy: EdgePolicy;
  keys?: KeyStore;
  /** Clock in ms since the epoch (tests pin it). */
  now?: () => number;
  /** Route id of a path (the route table's matchRoute); access tiers may name route ids. */
  routeOf?: (pathname: string) => string | null;
  /** Largest age of manifest.json's generated_at for /health/db to report db=true. */
  healthMaxAgeSeconds?: number;
  /** Bound of the rate limiter's memory (client identities). */
  maxIdentities?: number;
  /**
   * A limiter outside this process that decides whether a counted request is within its client's
   * quota (the Worker's rate limiting bindings), keyed by the shim's identity (`key:<sha256>` or
   * `ip:<address or /64>`): true allows, false answers 429, null leaves the decision to the in-process
   * counter. The RateLimit headers always come from the in-process counter. Not called when the
   * policy's rate limit is "off", nor for OPTIONS.
   */
  rateLimit?: (identity: string, policy: RateLimitPolicyName) => Promise<boolean | null>;
  /**
   * The snapshot's base URL (snapshot.json), for the type URIs of the edge's own problems (null when
   * unknown: then `about:blank`) and of /openapi.json (null: a 500). Called only when a problem or
   * /openapi.json is answered.
   */
  problemBaseUrl?: (files: FileReader) => Promise<string | null>;
  /** Told about unexpected failures (resolver or reader errors) answered with 500. */
  onError?: (error: unknown, request: Request) => void;
}

/** `rawTarget`: the request target exactly as received, when the platform has it (Node). */
export type EdgeHandler = (request: Request, clientIp: string, rawTarget?: string) => Promise<Response>;

const enc = new TextEncoder();

function json(value: unknown): Uint8Array {
  return enc.encode(JSON.stringify(value));
}

/** True when an If-None-Match value matches `etag` (weak comparison, RFC 9110 §13.1.2). */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  const mine = strip(etag);
  return ifNoneMatch.split(',').some((t) => t.trim() === '*' || strip(t) === mine);
}

/** A FileReader that refuses unsafe paths: the last guard that no path escapes the snapshot root. */
function guarded(files: FileReader): FileReader {
  const refuse = (path: string) => Promise.reject(new Error(`unsafe snapshot path refused: ${JSON.stringify(path)}`));
  const g: FileReader = {
    read: (path: string) => (isSafeFilePath(path) ? files.read(path) : refuse(path)),
  };
  const prefix = files.readPrefix?.bind(files);
  if (prefix) g.readPrefix = (path: string, length: number) => (isSafeFilePath(path) ? prefix(path, length) : refuse(path));
  const stat = files.stat?.bind(files);
  const range = files.readRange?.bind(files);
  if (stat && range) {
    g.stat = (path: string) => (isSafeFilePath(path) ? stat(path) : refuse(path));
    g.readRange = (path: string, start: number, length: number, etag: string) => (isSafeFilePath(path) ? range(path, start, length, etag) : refuse(path));
  }
  return g;
}

/** `generated_at` of a manifest (ms), from its first bytes when it is written first, else the whole file. */
async function manifestTime(files: FileReader): Promise<number> {
  const dec = new TextDecoder();
  if (files.readPrefix) {
    const head = await files.readPrefix('manifest.json', MANIFEST_PREFIX_BYTES);
    if (!head) return NaN;
    const m = /^\s*\{\s*"generated_at"\s*:\s*"([^"\\]{1,64})"/.exec(dec.decode(head));
    if (m) return Date.parse(m[1]!);
  }
  const bytes = await files.read('manifest.json');
  if (!bytes) return NaN;
  const parsed = JSON.parse(dec.decode(bytes)) as { generated_at?: unknown };
  return typeof parsed.generated_at === 'string' ? Date.parse(parsed.generated_at) : NaN;
}

/** The rate-limit policies of the RateLimit headers: clients without and with a valid API key. */
export type RateLimitPolicyName = 'anonymous' | 'keyed';

interface Limits {
  name: RateLimitPolicyName;
  limit: number;
}

export function createHandler(opts: HandlerOptions): EdgeHandler {
  const { policy } = opts;
  const now = opts.now ?? Date.now;
  const files = guarded(opts.files);
  const keys = opts.keys ?? createKeyStore([]);
  const routeOf = opts.routeOf ?? (() => null);
  const healthMaxAgeMs = (opts.healthMaxAgeSeconds ?? DEFAULT_HEALTH_MAX_AGE_SECONDS) * 1000;
  const rl = policy.rate_limit === 'off' ? null : policy.rate_limit;
  const limiter = rl ? new FixedWindowLimiter(rl.window_seconds * 1000, opts.maxIdentities) : null;
  const keyed = policy.access.mode === 'keyed';
  const openApi = openApiResponder(policy);

  function limitsOf(key: KeyEntry | null): Limits | null {
    if (!rl) return null;
    return key
      ? { name: 'keyed', limit: Math.floor(rl.requests * rl.keyed_multiplier) }
      : { name: 'anonymous', limit: rl.requests };
  }

  function tiersOf(pathname: string, routeId: string | null): Tier[] {
    const hit = (entries: string[]) => entries.some((e) => (e.startsWith('/') ? matchPathPattern(e, pathname) : e === routeId));
    const out: Tier[] = [];
    if (hit(policy.access.tiers.network)) out.push('network');
    if (hit(policy.access.tiers.market)) out.push('market');
    return out;
  }

  /** Headers every response carries: CORS and rate limit. */
  function baseHeaders(limits: Limits | null, take: Take | null): Headers {
    const h = new Headers();
    h.set('Access-Control-Allow-Origin', policy.cors.allow_origin);
    h.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    h.set('X-Content-Type-Options', 'nosniff');
    if (limits && take && rl) {
      // draft-ietf-httpapi-ratelimit-headers-10: Structured Field lists of (String) policy items.
      h.set('RateLimit-Policy', `"${limits.name}";q=${limits.limit};w=${rl.window_seconds}`);
      h.set('RateLimit', `"${limits.name}";r=${take.remaining};t=${take.resetSeconds}`);
      // The older, widely used three-field form (draft-ietf-httpapi-ratelimit-headers-06 and before).
      h.set('RateLimit-Limit', String(take.limit));
      h.set('RateLimit-Remaining', String(take.remaining));
      h.set('RateLimit-Reset', String(take.resetSeconds));
    }
    return h;
  }

  function deprecationHeaders(h: Headers, pathname: string): void {
    for (const d of policy.deprecations) {
      if (!matchPathPattern(d.path, pathname)) continue;
      h.set('Deprecation', `@${Math.floor(Date.parse(d.deprecation) / 1000)}`); // RFC 9745
      h.set('Sunset', new Date(Date.parse(d.sunset)).toUTCString()); // RFC 8594: an HTTP-date
      if (d.link) appendLink(h, `<${d.link}>; rel="deprecation"; type="text/html"`);
      return; // the first matching entry wins
    }
  }

  /** A catalogued problem of the edge, typed under the snapshot's base URL when it can be read. */
  async function edgeProblem(h: Headers, method: string, name: EdgeProblemName, detail: string, instance?: string): Promise<Response> {
    let base: string | null = null;
    try {
      base = opts.problemBaseUrl ? await opts.problemBaseUrl(files) : null;
    } catch {
      base = null; // an unreadable snapshot must not turn a 4xx into a 500
    }
    return problem(h, method, problemDoc(name, detail, base, instance));
  }

  function problem(h: Headers, method: string, doc: ProblemDoc): Response {
    const body = json(doc);
    h.set('Content-Type', PROBLEM_CONTENT_TYPE);
    h.set('Cache-Control', 'no-store');
    h.set('Content-Length', String(body.length));
    return new Response(method === 'HEAD' ? null : body, { status: doc.status, headers: h });
  }

  /** The outside limiter's verdict; a failing limiter is reported and leaves the decision to the counter. */
  async function outsideVerdict(identity: string, name: RateLimitPolicyName, request: Request): Promise<boolean | null> {
    if (!opts.rateLimit) return null;
    try {
      return await opts.rateLimit(identity, name);
    } catch (e) {
      opts.onError?.(e, request);
      return null;
    }
  }

  /** /openapi.json: the stored document regenerated for this policy, served from the request's origin. */
  async function openApiAnswer(origin: string): Promise<Answer> {
    const baseUrl = opts.problemBaseUrl ? await opts.problemBaseUrl(files) : null;
    if (baseUrl === null) throw new Error(`${OPENAPI_PATH}: the snapshot's base URL (snapshot.json) is unknown, so are its problem type URIs`);
    const stored = await files.read(OPENAPI_FILE);
    if (stored === null) throw new Error(`the snapshot has no ${OPENAPI_FILE}`);
    return openApi(stored, { serverUrl: origin, baseUrl });
  }

  // The manifest's time is looked up at most every HEALTH_CACHE_MS, so frequent probes cost nothing.
  let manifestSeen: { checkedAt: number; at: number } | null = null;
  /**
   * The HealthDb body: `db` true when the snapshot reads (manifest.json parses with a valid
   * generated_at), its age and whether it is fresh (at most healthMaxAgeMs old) beside it; status "ok"
   * only when both hold.
   */
  async function healthDb(): Promise<{ status: 'ok' | 'degraded'; service: string; db: boolean; generated_at: string | null; age_seconds: number | null; fresh: boolean }> {
    const t = now();
    if (!manifestSeen || t - manifestSeen.checkedAt >= HEALTH_CACHE_MS || t < manifestSeen.checkedAt) {
      let at = NaN;
      try {
        at = await manifestTime(files);
      } catch {
        at = NaN; // unreadable or not JSON: not healthy
      }
      manifestSeen = { checkedAt: t, at };
    }
    const at = manifestSeen.at;
    const db = Number.isFinite(at);
    // A manifest from the future (clock skew) counts as fresh, with age 0; a missing or bad date does not.
    const fresh = db && t - at <= healthMaxAgeMs;
    return {
      status: fresh ? 'ok' : 'degraded',
      service: SERVICE,
      db,
      generated_at: db ? new Date(at).toISOString() : null,
      age_seconds: db ? Math.max(0, Math.floor((t - at) / 1000)) : null,
      fresh,
    };
  }

  /**
   * A site file as stored (src/edge/site.ts): 200, or 206 for one satisfiable byte range (416 for a
   * range holding no byte of it), `Accept-Ranges: bytes`, the store's validator as ETag. A reader with
   * `stat` and `readRange` streams the bytes asked for and nothing else; any other reads the file.
   * Null when the snapshot has no such file (then the resolver's 404).
   */
  async function siteResponse(request: Request, method: string, h: Headers, file: string, retried = false): Promise<Response | null> {
    let size: number;
    let etag: string;
    let whole: Uint8Array | null = null;
    if (files.stat && files.readRange) {
      const st = await files.stat(file);
      if (!st) return null;
      ({ size, etag } = st);
    } else {
      whole = await files.read(file);
      if (!whole) return null;
      size = whole.length;
      etag = await sha256Etag(whole);
    }
    h.set('Cache-Control', CACHE_CONTROL[SITE_CACHE_CLASS]);
    h.set('Accept-Ranges', 'bytes');
    h.set('ETag', etag);
    const inm = request.headers.get('if-none-match');
    if (inm !== null && etagMatches(inm, etag)) return new Response(null, { status: 304, headers: h });
    // If-Range (RFC 9110 §13.1.5): a range of the version the client holds, else the whole file.
    const ifRange = request.headers.get('if-range');
    const range = requestedRange(ifRange === null || ifRange.trim() === etag ? request.headers.get('range') : null, size);
    if (range === 'unsatisfiable') {
      h.set('Content-Range', `bytes */${size}`);
      h.delete('ETag');
      return problem(h, method, { type: 'about:blank', title: 'Range Not Satisfiable', status: 416, detail: `The file has ${size} bytes; the range asked for holds none of them.` });
    }
    const part = range ?? { start: 0, length: size };
    h.set('Content-Type', siteContentType(file));
    h.set('Content-Length', String(part.length));
    if (range) h.set('Content-Range', `bytes ${part.start}-${part.start + part.length - 1}/${size}`);
    const status = range ? 206 : 200;
    if (method === 'HEAD') return new Response(null, { status, headers: h });
    if (whole) return new Response(whole.subarray(part.start, part.start + part.length), { status, headers: h });
    const body = part.length === 0 ? new Uint8Array(0) : await files.readRange!(file, part.start, part.length, etag);
    if (body !== null) return new Response(body, { status, headers: h });
    // Rewritten between stat and read (a build replaced it): once more, from the new version.
    if (retried) throw new Error(`${file} keeps changing while it is read`);
    for (const k of ['Accept-Ranges', 'Cache-Control', 'Content-Range', 'Content-Length', 'Content-Type', 'ETag']) h.delete(k);
    return siteResponse(request, method, h, file, true);
  }

  return async function handle(request: Request, clientIp: string, rawTarget?: string): Promise<Response> {
    const method = request.method.toUpperCase();
    const t = now();

    // 1. identity
    const presented = presentedKey(request.headers);
    const key = presented !== null ? await keys.lookup(presented) : null;
    const identity = key ? `key:${key.sha256}` : `ip:${ipIdentity(clientIp)}`;
    const limits = limitsOf(key);

    // 2. rate limit (a CORS preflight is sent by browsers on their own: it is not counted)
    let take: Take | null = null;
    if (limiter && limits) {
      if (method === 'OPTIONS') take = limiter.peek(identity, limits.limit, t);
      else {
        take = limiter.take(identity, limits.limit, t);
        const verdict = await outsideVerdict(identity, limits.name, request);
        // The outside limiter's window is not known here: a refusal says "retry after one window".
        if (verdict === true) take = { ...take, allowed: true };
        else if (verdict === false) take = { allowed: false, limit: limits.limit, remaining: 0, resetSeconds: rl!.window_seconds };
      }
    }
    const h = baseHeaders(limits, take);
    if (take && !take.allowed && limits && method !== 'OPTIONS') {
      h.set('Retry-After', String(take.resetSeconds));
      return problem(h, method, quotaExceededDoc(`At most ${limits.limit} requests per ${rl!.window_seconds} s are allowed for this client; retry in ${take.resetSeconds} s.`, limits.name));
    }

    // 3. hostile input: the raw target (when known) and the parsed URL both pass the checks
    for (const target of rawTarget !== undefined ? [rawTarget, request.url] : [request.url]) {
      const c = checkTarget(target);
      if (!c.ok) return edgeProblem(h, method, c.status === 414 ? 'uri-too-long' : 'invalid-request', c.detail);
    }
    const url = new URL(request.url);
    const pathname = url.pathname;
    deprecationHeaders(h, pathname);

    // 4. methods
    if (method === 'OPTIONS') {
      h.set('Access-Control-Allow-Methods', ALLOWED_METHODS);
      h.set('Access-Control-Allow-Headers', PREFLIGHT_ALLOW_HEADERS);
      h.set('Access-Control-Max-Age', String(policy.cors.max_age_seconds));
      h.set('Allow', ALLOWED_METHODS);
      return new Response(null, { status: 204, headers: h });
    }
    if (method !== 'GET' && method !== 'HEAD') {
      h.set('Allow', ALLOWED_METHODS);
      return edgeProblem(h, method, 'method-not-allowed', `Method ${method} is not allowed; this API is read-only (${ALLOWED_METHODS}).`, pathname);
    }

    // 5. access
    const keyless = isKeylessPath(pathname);
    const routeId = routeOf(pathname);
    if (keyed) {
      h.set('Vary', 'Authorization, X-API-Key');
      if (!keyless) {
        if (!key) {
          const why = presented === null ? 'This endpoint requires an API key' : 'The API key is not valid';
          return edgeProblem(h, method, 'api-key-required', `${why}: send it as "Authorization: Bearer <key>" or "X-API-Key: <key>".`, pathname);
        }
        // Tiers are ordered (docs/config.md): network < market. An endpoint needs the highest tier it is
        // listed in; one listed in no tier needs a key of either tier.
        const need = Math.max(1, ...tiersOf(pathname, routeId).map((t) => TIER_RANK[t]));
        const have = Math.max(0, ...key.tiers.map((t) => TIER_RANK[t]));
        if (have < need) {
          const held = key.tiers.length > 0 ? `the ${key.tiers.join(' and ')} tier` : 'no tier';
          const wanted = need === TIER_RANK.market ? 'the market tier' : 'the network or the market tier';
          return edgeProblem(h, method, 'insufficient-tier', `This endpoint needs an API key of ${wanted}; the key presented holds ${held}.`, pathname);
        }
      }
    }

    // 6. answer
    let answer: Answer;
    try {
      if (pathname === '/health') {
        answer = { status: 200, body: json({ status: 'ok', service: SERVICE }), contentType: 'application/json', cacheClass: 'none' };
      } else if (pathname === '/health/db') {
        answer = { status: 200, body: json(await healthDb()), contentType: 'application/json', cacheClass: 'none' };
      } else if (pathname === OPENAPI_PATH) {
        answer = await openApiAnswer(url.origin);
      } else {
        const site = siteFileOf(pathname);
        const served = site === null ? null : await siteResponse(request, method, h, site);
        if (served) return served;
        answer = await opts.resolve({ url, routeId }, files);
      }
    } catch (e) {
      for (const k of ['Accept-Ranges', 'Content-Range', 'ETag']) h.delete(k);
      opts.onError?.(e, request);
      return edgeProblem(h, method, 'internal-error', 'The request could not be answered; try again later.', pathname);
    }

    for (const [k, v] of Object.entries(answer.headers ?? {})) {
      if (k.toLowerCase() === 'link') appendLink(h, v);
      else if (!h.has(k)) h.set(k, v);
    }
    let cache = CACHE_CONTROL[answer.cacheClass];
    // Keyed mode: an answer behind a key must not be served to others by a shared cache.
    if (keyed && !keyless) cache = cache.replace(/^public\b/, 'private');
    h.set('Cache-Control', cache);

    if (answer.status === 200) {
      const etag = answer.etag ?? (await sha256Etag(answer.body));
      h.set('ETag', etag);
      const inm = request.headers.get('if-none-match');
      if (inm !== null && etagMatches(inm, etag)) return new Response(null, { status: 304, headers: h });
    }
    h.set('Content-Type', answer.contentType);
    h.set('Content-Length', String(answer.body.length));
    return new Response(method === 'HEAD' ? null : answer.body, { status: answer.status, headers: h });
  };
}

function appendLink(h: Headers, value: string): void {
  const prev = h.get('Link');
  h.set('Link', prev ? `${prev}, ${value}` : value);
}
