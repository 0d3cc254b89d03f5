// What an endpoint answers, before serialisation: shared by the query functions (the oracle over
// SQLite), the renderer and the shim's composers. Edge-safe.

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
}

export type ApiResult = { status: 200; body: unknown } | { status: 400 | 404; problem: ProblemBody };

export function ok(body: unknown): ApiResult {
  return { status: 200, body };
}
