// The page of a problem type (docs/api.md, "Problem catalogue"): what a problem document's `type` URI,
// `{base_url}/problems/<name>`, resolves to. A short HTML page per catalogue entry, generated from
// PROBLEM_CATALOGUE at the edge (route `discovery.problem_type`, src/edge/resolve.ts): the title, the
// status, when the API answers with it, what a client should do, and a link to the OpenAPI document.
// Edge-safe: no Node imports, no zod.
import { API_TITLE } from './openapi.js';
import { PROBLEM_CATALOGUE, problemTypeUri, QUOTA_EXCEEDED_TYPE, type ProblemName, type ProblemTypeInfo } from './problems.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML character data or an attribute value (either quote). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** Catalogue prose as HTML: escaped, its backquoted spans as <code>. */
function prose(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** A sentence from a catalogue phrase: capitalised, ending with a full stop. */
function sentence(phrase: string): string {
  const s = phrase.charAt(0).toUpperCase() + phrase.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

/**
 * Extra headers of a page: it loads nothing (no script, no image, no frame), its only style is inline,
 * and no other site may frame it.
 */
export const PROBLEM_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

/**
 * The HTML page of a problem type. `baseUrl` is the snapshot's (its `type` URIs'). Links are relative
 * (`../openapi.json`), so the page works under any base URL, a path prefix included.
 */
export function problemTypePage(name: ProblemName, baseUrl: string): string {
  const info: ProblemTypeInfo = PROBLEM_CATALOGUE[name];
  const type = problemTypeUri(name, baseUrl);
  const typeLine =
    type === QUOTA_EXCEEDED_TYPE
      ? `Problem type <code>${escapeHtml(type)}</code>, registered by IANA; this page says how this API uses it.`
      : `Problem type <code>${escapeHtml(type)}</code>.`;
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(`${info.status} ${info.title} · ${API_TITLE}`)}</title>`,
    '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem}code{font-size:.95em}</style>',
    '</head>',
    '<body>',
    `<h1>${escapeHtml(info.title)}</h1>`,
    `<p>HTTP status <strong>${info.status}</strong>. ${typeLine}</p>`,
    '<h2>When the API answers with it</h2>',
    `<p>${prose(sentence(info.when))}</p>`,
    '<h2>What to do</h2>',
    `<p>${prose(info.advice)}</p>`,
    `<p>The body is an RFC 9457 problem document (<code>application/problem+json</code>); its <code>detail</code> says what was wrong with the request, <code>instance</code> names its path. Every endpoint, its parameters and the problems it can answer: <a href="../openapi.json">the OpenAPI document</a>.</p>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
