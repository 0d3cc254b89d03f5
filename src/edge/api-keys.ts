// API keys at the edge (docs/edge.md, "API keys"). Edge-safe: Web Crypto only, no Node imports.
//
// Keys are never held in clear: the key file lists the SHA-256 (lower-case hex) of each key's UTF-8
// bytes. A presented key is hashed and looked up. The key file is JSON lines, one key a line:
//   {"sha256": "<64 hex>", "tiers": ["network", "market"], "label": "acme-prod"}
// Blank lines and lines starting with "#" are ignored. A JSON array of the same objects is accepted too
// (handy for a Worker secret). `tiers` may be empty: such a key only raises the rate limit.
import type { KeyEntry, KeyStore, Tier } from './types.js';

const TIERS: readonly Tier[] = ['network', 'market'];
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** A presented key: 1–256 visible ASCII characters (anything else is never a valid key). */
const KEY_SYNTAX = /^[\x21-\x7e]{1,256}$/;

/** Lower-case hex SHA-256 of the key's UTF-8 bytes. */
export async function hashKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

export function createKeyStore(entries: readonly KeyEntry[]): KeyStore {
  const byHash = new Map(entries.map((e) => [e.sha256, e]));
  return {
    size: byHash.size,
    async lookup(key: string): Promise<KeyEntry | null> {
      if (!KEY_SYNTAX.test(key)) return null;
      return byHash.get(await hashKey(key)) ?? null;
    },
  };
}

export class KeyFileError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid key file: ${problems.length} problem(s)`);
    this.name = 'KeyFileError';
  }
}

function entryOf(value: unknown, where: string, problems: string[]): KeyEntry | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${where}: expected an object {"sha256", "tiers", "label"?}`);
    return null;
  }
  const o = value as Record<string, unknown>;
  const before = problems.length;
  for (const k of Object.keys(o)) if (!['sha256', 'tiers', 'label'].includes(k)) problems.push(`${where}: unknown key "${k}"`);
  const sha = typeof o.sha256 === 'string' ? o.sha256.toLowerCase() : null;
  if (sha === null || !SHA256_HEX.test(sha)) problems.push(`${where}: sha256: expected 64 hex digits (the SHA-256 of the key, never the key)`);
  const tiers = o.tiers;
  if (!Array.isArray(tiers) || !tiers.every((t): t is Tier => typeof t === 'string' && (TIERS as readonly string[]).includes(t))) {
    problems.push(`${where}: tiers: expected an array of "network" and "market" (may be empty)`);
  }
  if (o.label !== undefined && typeof o.label !== 'string') problems.push(`${where}: label: expected a string`);
  if (problems.length > before) return null;
  const entry: KeyEntry = { sha256: sha!, tiers: [...new Set(tiers as Tier[])] };
  if (typeof o.label === 'string') entry.label = o.label;
  return entry;
}

/** Parses a key file (JSON lines or a JSON array). Throws KeyFileError listing every problem. */
export function parseKeyFile(text: string, name = 'keys'): KeyEntry[] {
  const problems: string[] = [];
  const values: { value: unknown; where: string }[] = [];
  const body = text.replace(/^\uFEFF/, '');
  if (body.trimStart().startsWith('[')) {
    try {
      const arr = JSON.parse(body) as unknown[];
      arr.forEach((value, i) => values.push({ value, where: `${name}[${i}]` }));
    } catch (e) {
      throw new KeyFileError([`${name}: invalid JSON: ${(e as Error).message}`]);
    }
  } else {
    body.split(/\r?\n/).forEach((line, i) => {
      const t = line.trim();
      if (t === '' || t.startsWith('#')) return;
      try {
        values.push({ value: JSON.parse(t), where: `${name}:${i + 1}` });
      } catch (e) {
        problems.push(`${name}:${i + 1}: invalid JSON: ${(e as Error).message}`);
      }
    });
  }
  const entries: KeyEntry[] = [];
  const seen = new Set<string>();
  for (const { value, where } of values) {
    const e = entryOf(value, where, problems);
    if (!e) continue;
    if (seen.has(e.sha256)) problems.push(`${where}: duplicate sha256 (each key once)`);
    seen.add(e.sha256);
    entries.push(e);
  }
  if (problems.length > 0) throw new KeyFileError(problems);
  return entries;
}

/** The key a request presents: `Authorization: Bearer <key>`, else `X-API-Key: <key>`; null when none. */
export function presentedKey(headers: Headers): string | null {
  const auth = headers.get('authorization');
  if (auth) {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(auth);
    if (m) return m[1]!;
  }
  const x = headers.get('x-api-key');
  return x ? x.trim() : null;
}
