// Opaque list cursors: keyset positions, never offsets, with an integrity check. Edge-safe
// (TextEncoder/TextDecoder only). The format, the check and its guarantee (every single-character
// substitution is rejected; one cursor per position) are stated once in docs/api.md, "Cursors".
import type { SortKey } from './sort-keys.js';

export type CursorDirection = 'next' | 'prev';

export interface CursorPosition {
  /** Route id of the list (src/api/routes/table.ts). */
  route: string;
  /** Canonical values of the list's partition parameters, in the list's declared order. */
  partition: readonly string[];
  /** Sort key of the item the cursor stands on (the last item of a page; for prev, the first). */
  key: SortKey;
  /** Snapshot-relative path of the chunk holding that item; '' when there is none (e.g. SQLite answers). */
  hint: string;
  dir: CursorDirection;
}

export const CURSOR_VERSION = 1;
/** Longest cursor accepted (characters); longer input is rejected before decoding. */
export const CURSOR_MAX_LENGTH = 2048;

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

// ---------------------------------------------------------------------------------------------
// CRC-32 (reflected polynomial 0xEDB88320)

let crcTable: Uint32Array | null = null;

function table(): Uint32Array {
  if (crcTable) return crcTable;
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  crcTable = t;
  return t;
}

export function crc32(bytes: Uint8Array, end = bytes.length): number {
  const t = table();
  let c = 0xffffffff;
  for (let i = 0; i < end; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// base64url (RFC 4648 §5, no padding), strict

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

export function base64urlEncode(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]! + ALPHABET[(n >>> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]! + ALPHABET[(n >>> 6) & 63]!;
  }
  return out;
}

/** Decodes base64url; null on a character outside the alphabet, a bad length or non-zero padding bits. */
export function base64urlDecode(s: string): Uint8Array | null {
  if (s.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((s.length * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    const v = code < 128 ? VALUE[code]! : -1;
    if (v < 0) return null;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >>> bits) & 0xff;
    }
    acc &= (1 << bits) - 1;
  }
  // Leftover bits (2 or 4) must be zero: otherwise two strings would decode to the same bytes.
  if (acc !== 0) return null;
  return out;
}

// ---------------------------------------------------------------------------------------------

function checkKeyField(f: unknown): boolean {
  return f === null || typeof f === 'string' || (typeof f === 'number' && Number.isFinite(f));
}

/** Encodes a position. Throws a TypeError on a key field that is not a string, a finite number or null. */
export function encodeCursor(p: CursorPosition): string {
  if (!p.key.every(checkKeyField)) throw new TypeError('cursor key fields must be strings, finite numbers or null');
  // JSON writes -0 as 0: a position is the same either way.
  const json = JSON.stringify([p.route, p.partition, p.key, p.hint, p.dir === 'prev' ? 'p' : 'n']);
  const body = enc.encode(json);
  const bytes = new Uint8Array(1 + body.length + 4);
  bytes[0] = CURSOR_VERSION;
  bytes.set(body, 1);
  const c = crc32(bytes, 1 + body.length);
  const at = 1 + body.length;
  bytes[at] = c & 0xff;
  bytes[at + 1] = (c >>> 8) & 0xff;
  bytes[at + 2] = (c >>> 16) & 0xff;
  bytes[at + 3] = (c >>> 24) & 0xff;
  return base64urlEncode(bytes);
}

export type CursorDecodeResult = { ok: true; cursor: CursorPosition } | { ok: false; reason: string };

const fail = (reason: string): CursorDecodeResult => ({ ok: false, reason });

/** Decodes a cursor string; any malformed, damaged or non-canonical input is rejected with a reason. */
export function decodeCursor(s: string): CursorDecodeResult {
  if (s.length === 0 || s.length > CURSOR_MAX_LENGTH) return fail('not a cursor of this API (bad length)');
  const bytes = base64urlDecode(s);
  if (!bytes || bytes.length < 6) return fail('not a cursor of this API (not base64url)');
  if (bytes[0] !== CURSOR_VERSION) return fail('not a cursor of this API (unknown version)');
  const end = bytes.length - 4;
  const stored = (bytes[end]! | (bytes[end + 1]! << 8) | (bytes[end + 2]! << 16) | (bytes[end + 3]! << 24)) >>> 0;
  if (crc32(bytes, end) !== stored) return fail('damaged or modified cursor (checksum mismatch)');
  let v: unknown;
  try {
    v = JSON.parse(dec.decode(bytes.subarray(1, end)));
  } catch {
    return fail('not a cursor of this API (bad payload)');
  }
  if (!Array.isArray(v) || v.length !== 5) return fail('not a cursor of this API (bad payload)');
  const [route, partition, key, hint, dir] = v as unknown[];
  if (
    typeof route !== 'string' ||
    route.length === 0 ||
    !Array.isArray(partition) ||
    !partition.every((x) => typeof x === 'string') ||
    !Array.isArray(key) ||
    key.length === 0 ||
    !key.every(checkKeyField) ||
    typeof hint !== 'string' ||
    (dir !== 'n' && dir !== 'p')
  ) {
    return fail('not a cursor of this API (bad payload)');
  }
  const cursor: CursorPosition = { route, partition: partition as string[], key: key as SortKey, hint, dir: dir === 'p' ? 'prev' : 'next' };
  // One cursor string per position: a payload in any other JSON spelling is not one we issued.
  if (encodeCursor(cursor) !== s) return fail('not a cursor of this API (non-canonical)');
  return { ok: true, cursor };
}
