// Errors that carry the process exit code the CLI should end with (docs/architecture.md §3):
// 0 success, 1 failure, 2 usage error, 3 finished with some sources failed, 4 another process holds
// the lock of the database or the snapshot directory (nothing was done; try again later).

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
export const EXIT_SOURCES_FAILED = 3;
export const EXIT_LOCKED = 4;

export class UsageError extends Error {
  readonly exitCode = EXIT_USAGE;
  /** One line per problem, e.g. `edge.rate_limit.requests: expected a positive integer, got "x"`. */
  readonly problems: string[];
  constructor(message: string, problems: string[] = []) {
    super(message);
    this.name = 'UsageError';
    this.problems = problems;
  }
}
