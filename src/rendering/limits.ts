/**
 * Concurrency and time limits around conversions: a counting semaphore shared by every
 * conversion of one renderer, and a deadline helper that runs clean-up when time runs out.
 */
import { AppError } from '../errors.ts';

/** Runs at most `concurrency` tasks at once; the others wait in arrival order. */
export interface Limiter {
  run<T>(task: () => Promise<T>): Promise<T>;
  /** Tasks running now and tasks waiting (for logs and tests). */
  readonly active: number;
  readonly waiting: number;
}

/**
 * Creates a FIFO semaphore.
 * @param concurrency tasks allowed at once (≥ 1; config RENDER_CONCURRENCY).
 */
export function createLimiter(concurrency: number): Limiter {
  const max = Math.max(1, Math.floor(concurrency));
  let active = 0;
  const queue: Array<() => void> = [];
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else active -= 1;
  };
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (active < max) active += 1;
      else await new Promise<void>((resolve) => queue.push(resolve)); // the slot passes straight to us
      try {
        return await task();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
  };
}

/**
 * Runs `task` with a deadline. When `timeoutMs` passes first, `onTimeout` runs (kill the process,
 * close the browser context) and the returned promise rejects with AppError UNAVAILABLE carrying
 * `message`; the task's own later result or error is ignored.
 * @param timeoutMs milliseconds (config RENDER_TIMEOUT_SECONDS × 1000).
 */
export async function withDeadline<T>(
  task: (signal: AbortSignal) => Promise<T>,
  options: { timeoutMs: number; message: string; onTimeout?: () => unknown },
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Reject first: a task that settles when aborted must not win the race.
      reject(
        new AppError('UNAVAILABLE', options.message, { details: { reason: 'timeout', timeoutMs: options.timeoutMs } }),
      );
      controller.abort();
      try {
        void Promise.resolve(options.onTimeout?.()).catch(() => {});
      } catch {
        // clean-up is best effort; the caller gets the timeout either way
      }
    }, options.timeoutMs);
  });
  const running = task(controller.signal);
  running.catch(() => {}); // after a timeout nobody awaits it
  try {
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** "60 s" / "0.5 s" for messages. */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(ms < 1000 ? 3 : 1))} s`;
}
