// Identifier rules shared by feeds, the API and the edge (pure: no Node imports).
//
// Canonical participant id: `<scheme>::<value>`, lower-cased. The full Peppol form
// `iso6523-actorid-upis::<scheme>:<value>` is accepted everywhere as input.

export const PEPPOL_ID_PREFIX = 'iso6523-actorid-upis::';

/** Participant identifier scheme: a four-digit ISO 6523 ICD (0208, 9925, ...). */
export const SCHEME_RE = /^[0-9]{4}$/;

/** Seat id as carried in a Peppol certificate CN. */
export const SEAT_ID_RE = /^P[A-Z]{2}[0-9]{6}$/;

const MAX_VALUE_LENGTH = 200;

export interface ParticipantId {
  id: string;
  scheme: string;
  value: string;
}

/**
 * Normalises a participant id given in canonical (`0208::0123456789`) or full Peppol form
 * (`iso6523-actorid-upis::0208:0123456789`). Returns null when the input is not a participant id.
 */
export function parseParticipantId(input: string): ParticipantId | null {
  let s = input.trim();
  if (s.length === 0 || s.length > MAX_VALUE_LENGTH + 40) return null;
  let scheme: string;
  let value: string;
  if (s.toLowerCase().startsWith(PEPPOL_ID_PREFIX)) {
    s = s.slice(PEPPOL_ID_PREFIX.length);
    const colon = s.indexOf(':');
    if (colon < 0) return null;
    scheme = s.slice(0, colon);
    value = s.slice(colon + 1);
  } else {
    const sep = s.indexOf('::');
    if (sep < 0) return null;
    scheme = s.slice(0, sep);
    value = s.slice(sep + 2);
  }
  value = value.toLowerCase();
  if (!SCHEME_RE.test(scheme)) return null;
  if (value.length === 0 || value.length > MAX_VALUE_LENGTH) return null;
  // No whitespace or control characters; no further `::` that would make the split ambiguous.
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(value) || value.includes('::')) return null;
  return { id: `${scheme}::${value}`, scheme, value };
}

/** An attribute type (keyword or dotted OID) followed by `=`. */
const ATTRIBUTE_START_RE = /^\s*(?:[A-Za-z][A-Za-z0-9-]*|[0-9]+(?:\.[0-9]+)*)\s*=/;

/**
 * Splits a certificate subject into `[type, value]` pairs, in order. RFC 4514 form
 * (`CN=PBE000123,O=Example\, Inc.,C=BE`, `+` between the attributes of a multi-valued RDN) or the
 * OpenSSL slash form (`/C=BE/O=Example/CN=PBE000123`). Backslash escapes are honoured, so an escaped
 * separator never starts an attribute. Producers that do not escape are tolerated: a separator not
 * followed by `type=` belongs to the value (`O=A+B Solutions`, `O=Example, Inc.`). Values are
 * unescaped and trimmed; types are upper-cased.
 */
function subjectAttributes(subject: string): Array<[string, string]> {
  const slashForm = subject.startsWith('/');
  const pieces: Array<{ sep: string; text: string }> = [];
  let sep = '';
  let cur = '';
  for (let i = slashForm ? 1 : 0; i < subject.length; i++) {
    const c = subject[i]!;
    if (c === '\\' && i + 1 < subject.length) {
      cur += c + subject[i + 1]!;
      i++;
    } else if (slashForm ? c === '/' : c === ',' || c === '+') {
      pieces.push({ sep, text: cur });
      sep = c;
      cur = '';
    } else {
      cur += c;
    }
  }
  pieces.push({ sep, text: cur });
  const attrs: string[] = [];
  for (const { sep: before, text } of pieces) {
    if (ATTRIBUTE_START_RE.test(text) || attrs.length === 0) attrs.push(text);
    else attrs[attrs.length - 1] += before + text;
  }
  const out: Array<[string, string]> = [];
  for (const attr of attrs) {
    const eq = attr.indexOf('=');
    if (eq <= 0) continue;
    out.push([attr.slice(0, eq).trim().toUpperCase(), attr.slice(eq + 1).replace(/\\(.)/g, '$1').trim()]);
  }
  return out;
}

/** Extracts the seat id from a certificate subject's CN, if it has the Peppol seat form. */
export function seatIdFromSubject(subject: string): string | null {
  for (const [type, value] of subjectAttributes(subject)) {
    if (type === 'CN' && SEAT_ID_RE.test(value)) return value;
  }
  return null;
}

/** Extracts the exact `O=` value from a certificate subject (RFC 4514 style, `\,` escapes honoured). */
export function organisationFromSubject(subject: string): string | null {
  for (const [type, value] of subjectAttributes(subject)) {
    if (type === 'O') return value.length > 0 ? value : null;
  }
  return null;
}
