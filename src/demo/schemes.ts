// Participant identifiers with plausible values per Peppol identifier scheme (ICD), check digits included.
//
// Uniqueness without storage: participant index i is mapped by a keyed bijection onto a point p of
// [0, SERIAL_SPACE). The space is cut into bands, one per (country, scheme), sized by the country mix; a
// participant's country and scheme are those of its band and its serial is p - band.start. Serials are
// unique within a band, every generator below is injective in the serial, so identifiers never collide.
import { COUNTRY_MIX } from './config.js';
import type { Rng } from './prng.js';

export const SERIAL_SPACE = 4_000_000;

export interface SchemeBand {
  country: string;
  scheme: string;
  start: number;
  width: number;
  directoryShare: number;
}

export const BANDS: readonly SchemeBand[] = (() => {
  const total = COUNTRY_MIX.reduce((a, c) => a + c.share, 0);
  const out: SchemeBand[] = [];
  let acc = 0; // accumulated share in "scheme weight" units
  const cuts: { c: (typeof COUNTRY_MIX)[number]; scheme: string; w: number }[] = [];
  for (const c of COUNTRY_MIX) {
    const sw = c.schemes.reduce((a, [, w]) => a + w, 0);
    for (const [scheme, w] of c.schemes) cuts.push({ c, scheme, w: (c.share / total) * (w / sw) });
  }
  let start = 0;
  for (let k = 0; k < cuts.length; k++) {
    const cut = cuts[k]!;
    acc += cut.w;
    const end = k === cuts.length - 1 ? SERIAL_SPACE : Math.round(acc * SERIAL_SPACE);
    out.push({ country: cut.c.country, scheme: cut.scheme, start, width: end - start, directoryShare: cut.c.directoryShare });
    start = end;
  }
  return out;
})();

export function bandOf(p: number): SchemeBand {
  let lo = 0;
  let hi = BANDS.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (BANDS[mid]!.start <= p) lo = mid;
    else hi = mid - 1;
  }
  return BANDS[lo]!;
}

const pad = (n: number, w: number): string => String(n).padStart(w, '0');
const digits = (s: string): number[] => Array.from(s, (ch) => ch.charCodeAt(0) - 48);

/** Spreads serial (< width) over [0, space) injectively with a random low part. */
function spread(serial: number, width: number, space: number, rng: Rng): number {
  const stride = Math.max(1, Math.floor(space / Math.max(width, 1)));
  if (serial * stride >= space) throw new Error(`identifier space exhausted (${serial} of ${width} in ${space})`);
  return serial * stride + rng.int(stride);
}

/** Luhn check digit for a payload. */
export function luhnDigit(payload: string): number {
  let sum = 0;
  const d = digits(payload);
  for (let k = 0; k < d.length; k++) {
    let x = d[d.length - 1 - k]!;
    if (k % 2 === 0) {
      x *= 2;
      if (x > 9) x -= 9;
    }
    sum += x;
  }
  return (10 - (sum % 10)) % 10;
}

export function luhnValid(s: string): boolean {
  return luhnDigit(s.slice(0, -1)) === Number(s.slice(-1));
}

/** GS1 mod-10 check digit (GLN, GTIN). */
export function gs1Digit(payload: string): number {
  const d = digits(payload);
  let sum = 0;
  for (let k = 0; k < d.length; k++) sum += d[d.length - 1 - k]! * (k % 2 === 0 ? 3 : 1);
  return (10 - (sum % 10)) % 10;
}

function mod97OfDigits(s: string): number {
  let r = 0;
  for (const ch of s) {
    const v = /[0-9]/.test(ch) ? ch.charCodeAt(0) - 48 : ch.toUpperCase().charCodeAt(0) - 55; // A=10 .. Z=35
    r = (r * (v >= 10 ? 100 : 10) + v) % 97;
  }
  return r;
}

function weightedSum(d: readonly number[], w: readonly number[]): number {
  let s = 0;
  for (let k = 0; k < w.length; k++) s += d[k]! * w[k]!;
  return s;
}

/** Belgian enterprise number (10 digits, mod-97 check). */
export function beEnterprise(serial: number, width: number, rng: Rng): string {
  const base = 2_000_000 + spread(serial, width, 18_000_000, rng);
  return `${pad(base, 8)}${pad(97 - (base % 97), 2)}`;
}

function noOrgnr(serial: number, width: number, rng: Rng): string {
  const body = pad(spread(serial, width, 10_000_000, rng), 7);
  for (const first of ['9', '8']) {
    const d = digits(first + body);
    const r = weightedSum(d, [3, 2, 7, 6, 5, 4, 3, 2]) % 11;
    const check = r === 0 ? 0 : 11 - r;
    if (check !== 10) return `${first}${body}${check}`;
  }
  throw new Error('unreachable');
}

function seOrgnr(serial: number, width: number, rng: Rng): string {
  const prefixes = ['556', '559', '802', '969'];
  const v = spread(serial, width, 4_000_000, rng);
  const payload = `${prefixes[v % 4]}${pad(Math.floor(v / 4), 6)}`;
  return `${payload}${luhnDigit(payload)}`;
}

const GLN_PREFIX: Record<string, string[]> = { SE: ['731', '735'], DK: ['570', '579'], DE: ['400', '426'], NZ: ['940', '942'], NO: ['704', '709'] };
function gln(country: string, serial: number, width: number, rng: Rng): string {
  const prefixes = GLN_PREFIX[country] ?? ['540'];
  const v = spread(serial, width, 2_000_000_000, rng);
  const payload = `${prefixes[v % prefixes.length]}${pad(Math.floor(v / prefixes.length), 9)}`;
  return `${payload}${gs1Digit(payload)}`;
}

function nlKvk(serial: number, width: number, rng: Rng): string {
  return pad(10_000_000 + spread(serial, width, 89_999_999, rng), 8);
}

function nlVat(serial: number, width: number, rng: Rng): string {
  const body = pad(spread(serial, width, 10_000_000, rng), 7);
  for (const first of ['8', '1']) {
    const d = digits(first + body);
    const r = weightedSum(d, [9, 8, 7, 6, 5, 4, 3, 2]) % 11;
    if (r !== 10) return `NL${first}${body}${r}B01`;
  }
  throw new Error('unreachable');
}

function dkCvr(serial: number, width: number, rng: Rng): string {
  const v = spread(serial, width, 4_000_000, rng);
  for (const base of [1_000_000 + v, 5_000_000 + v]) {
    const d = digits(pad(base, 7));
    const r = weightedSum(d, [2, 7, 6, 5, 4, 3, 2]) % 11;
    const check = (11 - r) % 11;
    if (check !== 10) return `${pad(base, 7)}${check}`;
  }
  throw new Error('unreachable');
}

function deLeitweg(serial: number, width: number, rng: Rng): string {
  const grob = `${pad(rng.range(1, 16), 2)}${pad(rng.int(1000), 3)}000`;
  const fein = pad(spread(serial, width, 9_000_000_000, rng), 10);
  const check = 98 - ((mod97OfDigits(grob + fein) * 100) % 97);
  return `${grob}-${fein}-${pad(check, 2)}`;
}

function deVat(serial: number, width: number, rng: Rng): string {
  const body = pad(10_000_000 + spread(serial, width, 89_999_999, rng), 8);
  let product = 10;
  for (const d of digits(body)) {
    let sum = (d + product) % 10;
    if (sum === 0) sum = 10;
    product = (2 * sum) % 11;
  }
  const check = (11 - product) % 10;
  return `DE${body}${check}`;
}

function frSiren(serial: number, width: number, rng: Rng): string {
  const payload = pad(10_000_000 + spread(serial, width, 89_999_999, rng), 8);
  return `${payload}${luhnDigit(payload)}`;
}

function frSiret(serial: number, width: number, rng: Rng): string {
  const siren = frSiren(serial, width, rng);
  const nic = `${siren}${pad(rng.range(1, 99), 4)}`;
  return `${nic}${luhnDigit(nic)}`;
}

function itVat(serial: number, width: number, rng: Rng): string {
  const company = pad(spread(serial, width, 10_000_000, rng), 7);
  const office = pad(rng.range(1, 100), 3);
  const payload = company + office;
  // Partita IVA: Luhn over the ten digits (doubling the even positions from the left).
  return `IT${payload}${luhnDigit(payload)}`;
}

function itIpa(serial: number, width: number, rng: Rng): string {
  return spread(serial, width, 2_000_000_000, rng).toString(36).toUpperCase().padStart(6, 'A');
}

function fiYtunnus(serial: number, width: number, rng: Rng): string {
  const v = spread(serial, width, 4_000_000, rng);
  for (const base of [1_000_000 + v, 5_000_000 + v]) {
    const d = digits(pad(base, 7));
    const r = weightedSum(d, [7, 9, 10, 5, 8, 4, 2]) % 11;
    if (r === 1) continue;
    return `${pad(base, 7)}${r === 0 ? 0 : 11 - r}`;
  }
  throw new Error('unreachable');
}

function auAbn(serial: number, width: number, rng: Rng): string {
  const tail = pad(spread(serial, width, 999_999_999, rng), 9);
  const w = [3, 5, 7, 9, 11, 13, 15, 17, 19];
  const rest = weightedSum(digits(tail), w);
  const v = (((-rest) % 89) + 89) % 89; // 10*(d1-1) + d2
  const d1 = Math.floor(v / 10) + 1;
  const d2 = v % 10;
  return `${d1}${d2}${tail}`;
}

export function abnValid(abn: string): boolean {
  const d = digits(abn);
  d[0] = d[0]! - 1;
  return weightedSum(d, [10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19]) % 89 === 0;
}

function sgUen(serial: number, width: number, rng: Rng): string {
  const v = spread(serial, width, 5_600_000, rng);
  const year = 1970 + Math.floor(v / 100_000);
  const body = `${year}${pad(v % 100_000, 5)}`;
  const letters = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
  const sum = weightedSum(digits(body), [10, 8, 6, 4, 9, 7, 5, 3, 1]);
  return `${body}${letters[sum % letters.length]}`;
}

function jpCorporate(serial: number, width: number, rng: Rng): string {
  const body = pad(100_000_000_000 + spread(serial, width, 899_999_999_999, rng), 12);
  const d = digits(body);
  let sum = 0;
  for (let n = 1; n <= 12; n++) sum += d[12 - n]! * (n % 2 === 1 ? 1 : 2);
  return `${9 - (sum % 9)}${body}`;
}

function ieVat(serial: number, width: number, rng: Rng): string {
  const body = pad(1_000_000 + spread(serial, width, 8_999_999, rng), 7);
  const r = weightedSum(digits(body), [8, 7, 6, 5, 4, 3, 2]) % 23;
  return `IE${body}${'WABCDEFGHIJKLMNOPQRSTUV'[r]}`;
}

function luVat(serial: number, width: number, rng: Rng): string {
  const body = 100_000 + spread(serial, width, 899_999, rng);
  return `LU${pad(body, 6)}${pad(body % 89, 2)}`;
}

function plNip(serial: number, width: number, rng: Rng): string {
  const v = spread(serial, width, 40_000_000, rng);
  for (const base of [100_000_000 + v, 500_000_000 + v]) {
    const r = weightedSum(digits(pad(base, 9)), [6, 5, 7, 2, 3, 4, 5, 6, 7]) % 11;
    if (r !== 10) return `PL${pad(base, 9)}${r}`;
  }
  throw new Error('unreachable');
}

function eeCode(serial: number, width: number, rng: Rng): string {
  const body = pad(10_000_000 + spread(serial, width, 9_999_999, rng), 7).slice(0, 7);
  let r = weightedSum(digits(body), [1, 2, 3, 4, 5, 6, 7]) % 11;
  if (r === 10) r = weightedSum(digits(body), [3, 4, 5, 6, 7, 8, 9]) % 11;
  if (r === 10) r = 0;
  return `${body}${r}`;
}

function gbVat(serial: number, width: number, rng: Rng): string {
  const body = pad(1_000_000 + spread(serial, width, 8_999_999, rng), 7);
  const s = weightedSum(digits(body), [8, 7, 6, 5, 4, 3, 2]);
  let check = 97 - (s % 97);
  if (check === 97) check = 0;
  return `GB${body}${pad(check, 2)}`;
}

/**
 * The identifier value as a directory would show it (upper-case letters where the scheme has them).
 * Canonical participant ids lower-case it.
 */
export function schemeValue(band: SchemeBand, serial: number, rng: Rng): string {
  const w = band.width;
  switch (band.scheme) {
    case '0208':
      return beEnterprise(serial, w, rng);
    case '9925':
      return `BE${beEnterprise(serial, w, rng)}`;
    case '0192':
      return noOrgnr(serial, w, rng);
    case '0007':
      return seOrgnr(serial, w, rng);
    case '0088':
      return gln(band.country, serial, w, rng);
    case '0106':
      return nlKvk(serial, w, rng);
    case '9944':
      return nlVat(serial, w, rng);
    case '0190':
      return `00000003${nlKvk(serial, w, rng)}0000`;
    case '0184':
      return dkCvr(serial, w, rng);
    case '0204':
      return deLeitweg(serial, w, rng);
    case '9930':
      return deVat(serial, w, rng);
    case '0009':
      return frSiret(serial, w, rng);
    case '0002':
      return frSiren(serial, w, rng);
    case '0211':
      return itVat(serial, w, rng);
    case '0201':
      return itIpa(serial, w, rng);
    case '0216':
      return `0037${fiYtunnus(serial, w, rng)}`;
    case '0037':
      return fiYtunnus(serial, w, rng);
    case '0151':
      return auAbn(serial, w, rng);
    case '9915':
      return atUid(serial, w, rng);
    case '0195':
      return sgUen(serial, w, rng);
    case '0188':
      return jpCorporate(serial, w, rng);
    case '9935':
      return ieVat(serial, w, rng);
    case '9938':
      return luVat(serial, w, rng);
    case '9945':
      return plNip(serial, w, rng);
    case '0191':
      return eeCode(serial, w, rng);
    case '9932':
      return gbVat(serial, w, rng);
    default:
      throw new Error(`no generator for scheme ${band.scheme}`);
  }
}

function atUid(serial: number, width: number, rng: Rng): string {
  const body = pad(spread(serial, width, 10_000_000, rng), 7);
  const d = digits(body);
  const cs = (x: number): number => Math.floor(x / 10) + (x % 10);
  const s = d[0]! + cs(2 * d[1]!) + d[2]! + cs(2 * d[3]!) + d[4]! + cs(2 * d[5]!) + d[6]!;
  const check = (10 - ((s + 4) % 10)) % 10;
  return `ATU${body}${check}`;
}

/** Registration number of a provider organisation (curation natural_key), by country. */
export function naturalKey(country: string, serial: number, rng: Rng): string {
  const band = BANDS.find((b) => b.country === country) ?? BANDS[0]!;
  // Counted down from the top of the band; a provider's number may equal some participant's, as in life.
  const s = band.width - 1 - serial;
  const v = schemeValue(band, s, rng);
  return band.scheme === '9925' || /^[A-Z]{2}/.test(v) ? v : `${country}${v}`;
}
