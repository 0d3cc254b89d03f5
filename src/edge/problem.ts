// RFC 9457 problem documents the edge answers by itself (hostile input, 403, 405, 429, 500).
// Edge-safe: no Node imports. Problems about parameters and unknown resources come from the resolver.
//
// Types: the catalogue's (src/api/problems.ts, docs/api.md "Problem catalogue"), under the snapshot's
// base URL; 429 uses the quota-exceeded type of the IETF RateLimit draft
// (draft-ietf-httpapi-ratelimit-headers-10 §5.1) with its `violated-policies` extension member.
import { PROBLEM_CATALOGUE, problemTypeUri } from '../api/problems.js';

/** The catalogue's problems the HTTP layer answers by itself. */
export type EdgeProblemName = 'invalid-request' | 'uri-too-long' | 'api-key-required' | 'insufficient-tier' | 'method-not-allowed' | 'internal-error';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

const PHRASES: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  414: 'URI Too Long',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
};

export interface ProblemDoc {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  [extension: string]: unknown;
}

/**
 * A problem of the catalogue (src/api/problems.ts) the edge answers by itself: typed
 * `{base_url}/problems/<name>` with the catalogue's title when the snapshot's base URL is known, else
 * `about:blank` with the HTTP status phrase (RFC 9457 §4.2.1) — the snapshot may not be readable yet.
 */
export function problemDoc(name: EdgeProblemName, detail: string, baseUrl: string | null, instance?: string): ProblemDoc {
  const info = PROBLEM_CATALOGUE[name];
  const doc: ProblemDoc =
    baseUrl !== null
      ? { type: problemTypeUri(name, baseUrl), title: info.title, status: info.status, detail }
      : { type: 'about:blank', title: PHRASES[info.status] ?? 'Error', status: info.status, detail };
  if (instance !== undefined) doc.instance = instance;
  return doc;
}

export function quotaExceededDoc(detail: string, policy: string, instance?: string): ProblemDoc {
  const doc: ProblemDoc = {
    type: QUOTA_EXCEEDED,
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status: 429,
    detail,
  };
  if (instance !== undefined) doc.instance = instance;
  doc['violated-policies'] = [policy];
  return doc;
}
