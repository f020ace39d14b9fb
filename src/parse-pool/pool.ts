/**
 * The parse pool (issue 23, "Untrusted bytes are parsed off the event loop, with limits"): worker
 * threads in which every CPU-heavy parse of what a caller sends runs — PDFs through mupdf and
 * pdf-lib (uploads, text tags, previews, rewrites, `/tools/merge`, `/tools/verify`), PKCS#12
 * bundles, CMS and ASN.1, images — so that the event loop keeps answering while a crafted file
 * costs what it costs, and that cost is bounded.
 *
 * Layers: this module is low (src/documents/, src/signing/, src/http/ and src/rendering/ import it)
 * and imports neither the worker nor any task's module, not even their types. A task is declared by
 * the module that parses, next to its function (tasks.ts parseTask), and runParseTask takes that
 * declaration, so a call's arguments and answer are typed from the task's own function. The worker,
 * src/parse-worker/worker.ts, is an entry point like main.ts, above the modules whose tasks it runs;
 * tasks.ts, beside this file, holds what the pool and the worker agree on (see there).
 *
 * Per task: a CPU-time limit (PARSE_TIMEOUT_SECONDS of the worker thread's CPU time, read from
 * procfs: thread-clock.ts; four times that on the clock at most; the worker running it is terminated
 * and another started), and a memory limit (PARSE_MEMORY_MB) on the worker's JavaScript heap (`resourceLimits`)
 * and on its WebAssembly memory — mupdf's, which lives outside the V8 heap — through a cap on
 * `WebAssembly.Memory#grow` inside the worker. A worker whose memory is over
 * RECYCLE_ABOVE_BYTES after a task is replaced, so that a large parse's memory goes back to the
 * system: a WebAssembly memory never shrinks while its worker lives. At most PARSE_WORKERS tasks
 * run at once; further tasks wait in a queue taken in turn across owners (accounts; FairQueue), so
 * one account's burst does not hold back another account's task behind the whole burst; over
 * PARSE_QUEUE_MAX waiting tasks a task is refused with 503 and `Retry-After`.
 *
 * Library: piscina (starting workers with resource limits, replacing dead ones, aborting a task by
 * AbortSignal, which terminates the worker running it). Its own queue is not used: a task carrying
 * an AbortSignal that finds no idle worker goes to piscina's internal "skip queue" in arrival
 * order, whatever its `taskQueue` option says, so the fair queue is kept here, in front, and
 * piscina is handed a task only when a worker is free for it.
 *
 * The worker runs dist/parse-worker.mjs when Signet runs bundled (scripts/build.mjs: `npm start`,
 * the CLI's bundle), and src/parse-worker/worker-loader.mjs — tsx, then worker.ts — when it runs from
 * its TypeScript sources (tests, `signet` from source).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { AppError, type ErrorCode } from '../errors.ts';
import { PROJECT_ROOT } from '../paths.ts';
import { kernelThreadId, threadCpuMs } from './thread-clock.ts';
import {
  CLOCK_SLOTS,
  type ParseTask,
  type ParseTaskEnvelope,
  type ParseTaskName,
  type ParseTaskRequest,
  type ParseWorkerData,
  RETIRE_FLAG_SLOTS,
  retireFlag,
  type TaskFunction,
  taskClockStart,
  taskClockThread,
} from './tasks.ts';

/** The pool's size and limits (PARSE_* settings, src/config.ts). */
export interface ParsePoolSettings {
  /** Tasks running at once (worker threads). */
  workers: number;
  /**
   * Most CPU time a task may use, in milliseconds (PARSE_TIMEOUT_SECONDS): its worker thread's, from
   * the task's start (Linux); elsewhere the time on the clock from when it is handed to a worker. On
   * the clock, a task ends after WALL_CLOCK_FACTOR times this in any case.
   */
  timeoutMs: number;
  /** Largest JavaScript heap, and largest WebAssembly memory, of a worker, in bytes (PARSE_MEMORY_MB). */
  memoryBytes: number;
  /** Tasks that may wait for a worker; one more is refused with 503 (PARSE_QUEUE_MAX). */
  queueMax: number;
  /**
   * How much lower the workers' CPU priority is than the event loop's (PARSE_NICE, 0–19; Linux's
   * nice: under its scheduler a thread at nice 5 weighs about a third of one at 0, at nice 10 a
   * tenth). Their time limit counts CPU time, so a parse that waits for the CPU is not cut short.
   */
  nice: number;
}

/**
 * A worker holding more than this after a task (its WebAssembly memory, JavaScript heap and
 * buffers together; or a quarter of PARSE_MEMORY_MB when that is less) is replaced. mupdf's memory
 * is ~32 MB once it has rendered a page and a worker's heap ~10–30 MB: a template upload of a few
 * MB stays under this; issue 23's merge of 50 files (46 MB of WebAssembly, ~100 MB of buffers) does not.
 */
export const RECYCLE_ABOVE_BYTES = 128 * 1024 * 1024;

/** Seconds a refused task's client is told to wait (`Retry-After`). */
const RETRY_AFTER_SECONDS = 5;

/** A worker with nothing to do ends after this long (milliseconds), giving its memory back. */
const IDLE_TIMEOUT_MS = 30_000;

export interface ParseTaskOptions {
  /** Whose task it is, for the fair queue: an account id (else a client address, or `system`). */
  owner: string | number;
  /** What is parsed, as messages name it: `The file`, `files[0]`, `documents[1]`. */
  subject: string;
  /** What the task does, in the limits' messages: `read` (default), `merged`, `verified`. */
  verb?: string;
  /**
   * Byte arrays of the input handed over to the worker instead of copied (those that are their
   * whole buffer): the caller must not use them afterwards. Saves a copy of large files on the
   * event loop.
   */
  transfer?: readonly Uint8Array[];
}

interface Waiting {
  owner: string;
  start: () => void;
}

/**
 * Waiting tasks taken in turn across owners: `shift` takes the oldest waiting task of the owner
 * whose last task started longest ago (never: first), so N owners with waiting tasks share the
 * workers 1/N each, and an owner whose tasks keep every worker busy waits behind one that just
 * arrived.
 */
class FairQueue {
  private readonly waiting = new Map<string, Waiting[]>();
  /** Owners by when their last task started (a Map keeps insertion order: least recent first). */
  private readonly lastStarted = new Map<string, number>();
  private starts = 0;
  size = 0;

  push(task: Waiting): void {
    const tasks = this.waiting.get(task.owner);
    if (tasks) tasks.push(task);
    else this.waiting.set(task.owner, [task]);
    this.size += 1;
  }

  /** Records that a task of `owner` started now. */
  started(owner: string): void {
    this.lastStarted.delete(owner);
    this.lastStarted.set(owner, (this.starts += 1));
    // Owners not seen for long are forgotten (they count as never started, which only favours them).
    if (this.lastStarted.size > 10_000) this.lastStarted.delete(this.lastStarted.keys().next().value!);
  }

  shift(): Waiting | undefined {
    let chosen: string | undefined;
    let chosenStart = Number.POSITIVE_INFINITY;
    for (const owner of this.waiting.keys()) {
      const start = this.lastStarted.get(owner) ?? 0;
      if (start < chosenStart) {
        chosen = owner;
        chosenStart = start;
      }
    }
    if (chosen === undefined) return undefined;
    const tasks = this.waiting.get(chosen)!;
    const task = tasks.shift()!;
    if (tasks.length === 0) this.waiting.delete(chosen);
    this.size -= 1;
    return task;
  }
}

/** How often a running task's CPU time is looked at, in milliseconds (procfs counts in 10 ms steps). */
const CLOCK_CHECK_MS = 100;

/**
 * A task is stopped after this many times PARSE_TIMEOUT_SECONDS on the clock, whatever CPU time it
 * used: a task that gets almost no CPU on a saturated machine ends too, in bounded time.
 */
const WALL_CLOCK_FACTOR = 4;

class ParsePool {
  private readonly piscina: Piscina<ParseTaskRequest, ParseTaskEnvelope>;
  private readonly queue = new FairQueue();
  /** Slots taken: tasks handed to piscina, and replaced workers not yet gone. */
  private busy = 0;
  /**
   * Set to 1 (at `retireFlag(threadId)`) by a worker, before it answers, when it is to be
   * replaced after that task: piscina hands a finished worker a task waiting in its own queue (one
   * waiting for a worker being started) before the answer reaches this module, and the balancer
   * below must already pass over it. Two live workers sharing a slot would need 65,536 workers
   * started during one's life; even then one is only passed over until the other has gone.
   */
  private readonly retireFlags = new Int32Array(new SharedArrayBuffer(RETIRE_FLAG_SLOTS * 4));
  /**
   * Per running task (its `clockSlot`, taken in turn): the kernel thread id of the worker running it
   * and that thread's CPU time when the task started (ms; tasks.ts taskClockThread, taskClockStart),
   * written by the worker (src/parse-worker/worker.ts), 0 until then. The time limit is on the CPU
   * time the task used (thread-clock.ts).
   */
  private readonly taskClocks = new Int32Array(new SharedArrayBuffer(CLOCK_SLOTS * 2 * 4));
  private nextClockSlot = 0;
  /** Threads' CPU time can be read (Linux procfs); otherwise the limit is on the clock. */
  private readonly cpuClock = kernelThreadId() !== 0;

  constructor(readonly settings: ParsePoolSettings) {
    this.piscina = new Piscina({
      filename: workerFile(),
      minThreads: 0,
      maxThreads: settings.workers,
      idleTimeout: IDLE_TIMEOUT_MS,
      concurrentTasksPerWorker: 1,
      // Parses run at a lower CPU priority than the event loop (Linux: nice is per thread; piscina
      // applies it in each worker through @napi-rs/nice): on a machine with as many busy workers as
      // cores, the requests the event loop answers get the CPU first (bench:abuse, issue 23).
      niceIncrement: settings.nice,
      // Workers wait for tasks on their event loop (Atomics would block the timers a worker needs).
      atomics: 'disabled',
      resourceLimits: { maxOldGenerationSizeMb: Math.floor(settings.memoryBytes / 1024 / 1024) },
      workerData: {
        wasmMemoryBytes: settings.memoryBytes,
        recycleAboveBytes: Math.min(RECYCLE_ABOVE_BYTES, settings.memoryBytes / 4),
        retireFlags: this.retireFlags,
        taskClocks: this.taskClocks,
      } satisfies ParseWorkerData,
      // An idle worker that is not being replaced.
      loadBalancer: (_task, workers) =>
        workers.find(
          (w) =>
            w.currentUsage === 0 &&
            !w.terminating &&
            !w.destroyed &&
            Atomics.load(this.retireFlags, retireFlag(w.id)) === 0,
        ) ?? null,
    });
    // A worker that fails outside a task (its start) is reported here; a task's failure goes to the task.
    this.piscina.on('error', () => {});
  }

  run(name: ParseTaskName, args: unknown[], options: ParseTaskOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const owner = String(options.owner);
      const start = () => {
        this.busy += 1;
        this.queue.started(owner);
        this.execute(name, args, options).then(resolve, reject);
      };
      if (this.busy < this.settings.workers) return start();
      if (this.queue.size >= this.settings.queueMax)
        return reject(
          new AppError(
            'UNAVAILABLE',
            `Too many files are being read right now (more than ${this.settings.queueMax} waiting, ` +
              'PARSE_QUEUE_MAX); try again in a few seconds.',
            { details: { retryAfterSeconds: RETRY_AFTER_SECONDS } },
          ),
        );
      this.queue.push({ owner, start });
    });
  }

  /** Runs one task on a worker (a slot is taken); frees the slot, or keeps it while its worker is replaced. */
  private async execute(name: ParseTaskName, args: unknown[], options: ParseTaskOptions): Promise<unknown> {
    const abort = new AbortController();
    const clockSlot = this.nextClockSlot;
    this.nextClockSlot = (clockSlot + 1) % CLOCK_SLOTS;
    Atomics.store(this.taskClocks, taskClockThread(clockSlot), 0);
    const started = performance.now();
    const timer = setInterval(() => {
      if (this.overTime(clockSlot, performance.now() - started)) abort.abort();
    }, CLOCK_CHECK_MS);
    let envelope: ParseTaskEnvelope;
    try {
      const transferList = (options.transfer ?? [])
        .filter((bytes) => bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength)
        .map((bytes) => bytes.buffer)
        .filter((buffer): buffer is ArrayBuffer => buffer instanceof ArrayBuffer);
      envelope = await this.piscina.run({ name, args, clockSlot } satisfies ParseTaskRequest, {
        signal: abort.signal,
        transferList: [...new Set(transferList)],
      });
    } catch (error) {
      this.release();
      throw this.failure(error, abort.signal.aborted, options);
    } finally {
      clearInterval(timer);
    }
    if (envelope.recycle) this.replace(envelope.threadId);
    else this.release();
    if (envelope.ok) return envelope.value;
    if (envelope.memoryLimit) throw this.memoryLimit(options);
    if (envelope.error) {
      const { code, message, details } = envelope.error;
      throw new AppError(code as ErrorCode, message, details ? { details } : undefined);
    }
    throw new Error(`parse task ${name} failed: ${envelope.unexpected}`);
  }

  /**
   * Whether the task in `clockSlot`, handed to piscina `wallMs` ago, is over its time: the CPU time
   * its worker thread used since the task started over PARSE_TIMEOUT_SECONDS (Linux), or the clock
   * over it where CPU time cannot be read; and in any case the clock over WALL_CLOCK_FACTOR times it.
   * Before its worker took it (a new worker starting), only the clock counts.
   */
  private overTime(clockSlot: number, wallMs: number): boolean {
    const limit = this.settings.timeoutMs;
    if (wallMs > limit * WALL_CLOCK_FACTOR) return true;
    if (!this.cpuClock) return wallMs > limit;
    const tid = Atomics.load(this.taskClocks, taskClockThread(clockSlot));
    if (tid === 0) return false;
    const used = threadCpuMs(tid);
    return used !== undefined && used - Atomics.load(this.taskClocks, taskClockStart(clockSlot)) > limit;
  }

  /** The error a task that did not answer stands for: over its time or its heap, or unexpected. */
  private failure(error: unknown, timedOut: boolean, options: ParseTaskOptions): Error {
    if (timedOut)
      return new AppError(
        'VALIDATION',
        `${options.subject} could not be ${options.verb ?? 'read'} within ${this.settings.timeoutMs / 1000} s ` +
          '(PARSE_TIMEOUT_SECONDS).',
        { cause: error },
      );
    if ((error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') return this.memoryLimit(options, error);
    return error instanceof Error ? error : new Error(String(error));
  }

  private memoryLimit(options: ParseTaskOptions, cause?: unknown): AppError {
    const megabytes = this.settings.memoryBytes / 1024 / 1024;
    return new AppError(
      'VALIDATION',
      `${options.subject} could not be ${options.verb ?? 'read'} within ${megabytes} MB of memory (PARSE_MEMORY_MB).`,
      { cause },
    );
  }

  /** Ends the worker `threadId` (its memory goes back to the system); its slot is free once it has exited. */
  private replace(threadId: number): void {
    const worker = this.piscina.threads.find((w: Worker) => w.threadId === threadId);
    if (!worker) {
      Atomics.store(this.retireFlags, retireFlag(threadId), 0);
      this.release();
      return;
    }
    worker.once('exit', () => {
      Atomics.store(this.retireFlags, retireFlag(threadId), 0);
      this.release();
    });
    void worker.terminate();
  }

  private release(): void {
    this.busy -= 1;
    this.queue.shift()?.start();
  }

  /** Ends every worker once the tasks running and waiting are done. */
  async close(): Promise<void> {
    await this.piscina.close();
  }
}

/** The worker's entry file: the bundle's when this module runs bundled, else the TypeScript loader. */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return path.join(path.dirname(here), '..', 'parse-worker', 'worker-loader.mjs');
  return path.join(PROJECT_ROOT, 'dist', 'parse-worker.mjs');
}

let settings: ParsePoolSettings | undefined;
let pool: ParsePool | undefined;

/**
 * Sets the pool's size and limits (the service and the CLI call this with their configuration; a
 * process that does not parses with the defaults). A pool already started with other settings
 * finishes its tasks and the next task starts a new one.
 */
export function configureParsePool(next: ParsePoolSettings): void {
  settings = { ...next };
  if (pool && JSON.stringify(pool.settings) !== JSON.stringify(settings)) {
    void pool.close();
    pool = undefined;
  }
}

/**
 * Runs `task` (declared by tasks.ts parseTask next to its function) in the pool: the worker calls
 * its function with `args`.
 * @param args the task function's arguments (structured-cloned to the worker; byte arrays listed in
 *   `options.transfer` are moved)
 * @returns what the task's function returns (structured-cloned: a Buffer arrives as a Uint8Array)
 * @throws the task's AppError as it threw it; AppError VALIDATION (422) `<subject> could not be
 *   read within 20 s (PARSE_TIMEOUT_SECONDS).` / `<subject> could not be read within 512 MB of memory
 *   (PARSE_MEMORY_MB).` (`read`: options.verb); AppError UNAVAILABLE (503, `Retry-After: 5`) when PARSE_QUEUE_MAX tasks
 *   wait already; an Error for anything unexpected
 */
export async function runParseTask<F extends TaskFunction>(
  task: ParseTask<ParseTaskName, F>,
  args: Parameters<F>,
  options: ParseTaskOptions,
): Promise<Awaited<ReturnType<F>>> {
  // The defaults, when nothing configured the pool: imported here, not at the top, because the
  // modules that call this are loaded in the workers too, which need no configuration.
  settings ??= (await import('../config.ts')).loadConfig({}).parsePool;
  pool ??= new ParsePool(settings);
  return pool.run(task.name, args, options) as Promise<Awaited<ReturnType<F>>>;
}

/** Ends the pool's workers after their tasks (shutdown). */
export async function closeParsePool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close();
}

/**
 * A file as a task takes it: its bytes, or the base64 text a request carried, decoded in the worker
 * (bytesOf) so that decoding a large upload does not hold the event loop (40 MB of base64: ~0.1–0.4 s).
 */
export type TaskBytes = Uint8Array | { base64: string };

/** The bytes of a TaskBytes (in the worker: base64 as Ruby's decode64 reads it, whitespace ignored). */
export function bytesOf(file: TaskBytes): Uint8Array {
  return file instanceof Uint8Array ? file : Buffer.from(file.base64, 'base64');
}

/**
 * Bytes as the pool passes them: a Uint8Array that is its whole buffer, so that the structured
 * clone copies these bytes only (a Buffer is often a view of a larger buffer, which would be
 * copied whole).
 */
export function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}
