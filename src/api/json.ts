// The one serialiser of response bodies (docs/api.md, "Bodies"). The renderer (exact files) and the edge
// shim (composed pages, problems) both call it, so the same value gives the same bytes everywhere.
// Edge-safe: TextEncoder only.
//
// Rules: `JSON.stringify` without indentation, keys in the order the value was built (the query
// functions build objects in the schema's key order), and one trailing "\n" (a body printed by curl
// ends its line; JSON parsers ignore the whitespace).
// Non-finite numbers are not checked here: JSON.stringify would write null, which the response
// schemas reject (tests and `peppol-snapshot verify` validate bodies). A replacer that throws would
// cost +50% per body (measured: 7.3 -> 11.2 us for a 2 KB participant) on millions of files.

export const JSON_CONTENT_TYPE = 'application/json';
/** RFC 9727 §4.1: the api-catalog linkset carries this profile. */
export const LINKSET_CONTENT_TYPE = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"';
/** The problem type pages (`/problems/{name}`, src/api/problem-pages.ts): the one answer that is not JSON. */
export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

const enc = new TextEncoder();

/** The body text of a JSON value. Throws a TypeError when the value has no JSON form (undefined, a function). */
export function jsonText(value: unknown): string {
  const text = JSON.stringify(value);
  if (typeof text !== 'string') throw new TypeError('jsonText: the value has no JSON representation');
  return `${text}\n`;
}

/** The body bytes (UTF-8) of a JSON value. */
export function jsonBody(value: unknown): Uint8Array {
  return enc.encode(jsonText(value));
}
