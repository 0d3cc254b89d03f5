// Retries with exponential backoff and jitter, shared by feed reading (src/feeds) and publishing
// (src/publish). What counts as worth retrying is the caller's predicate.

export interface RetryOptions {
  /** Retries after the first attempt (0: try once). */
  retries: number;
  /** First backoff delay in ms; it doubles with every retry. */
  retry_base_ms: number;
}

/** Backoff before retry `attempt + 1`: base, 2×base, 4×base, ... with ±25% jitter. */
export function retryDelay(opts: RetryOptions, attempt: number): number {
  return opts.retry_base_ms * 2 ** attempt * (0.75 + Math.random() * 0.5);
}

export const sleep = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

/**
 * Runs `fn` until it succeeds, fails with an error `retryable` rejects, or has failed `retries + 1`
 * times; waits retryDelay between attempts. `giveUp` turns the last retryable error into the one
 * thrown (e.g. to say how many attempts were made); by default that error is thrown as it is.
 */
export async function retrying<T>(
  opts: RetryOptions,
  retryable: (e: unknown) => boolean,
  fn: (attempt: number) => Promise<T>,
  hooks: { onRetry?: (attempt: number, error: unknown, delayMs: number) => void; giveUp?: (error: unknown, attempts: number) => Error } = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (!retryable(e)) throw e;
      if (attempt >= opts.retries) throw hooks.giveUp ? hooks.giveUp(e, attempt + 1) : e;
      const delay = retryDelay(opts, attempt);
      hooks.onRetry?.(attempt + 1, e, delay);
      await sleep(delay);
    }
  }
}
