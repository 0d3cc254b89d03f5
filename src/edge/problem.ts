// RFC 9457 problem documents the edge answers by itself (hostile input, 403, 405, 429, 500).
// Edge-safe: no Node imports. Problems about parameters and unknown resources come from the resolver.
//
// Types: `about:blank` (the title is then the status phrase, RFC 9457 §4.2.1), except 429, which uses
// the quota-exceeded type of the IETF RateLimit draft (draft-ietf-httpapi-ratelimit-headers-10 §5.1)
// with its `violated-policies` extension member.

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

export function problemDoc(status: number, detail: string, instance?: string, extra: Record<string, unknown> = {}): ProblemDoc {
  const doc: ProblemDoc = { type: 'about:blank', title: PHRASES[status] ?? 'Error', status, detail };
  if (instance !== undefined) doc.instance = instance;
  return { ...doc, ...extra };
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
