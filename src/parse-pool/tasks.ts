/**
 * The parse pool's protocol, what the pool (pool.ts) and its worker (src/parse-worker/worker.ts)
 * agree on: the tasks' names, what a task is, what the pool sends and the worker answers, and the
 * shared memory both use. Plain types and constants, no imports. The modules that parse (src/documents/,
 * src/signing/, src/http/, src/rendering/) import the pool, the worker imports those modules, and
 * both the pool and the worker read this file: every import runs down (docs/architecture.md), and
 * neither the pool nor a caller knows the worker.
 *
 * A task is declared once, next to the function it runs, by the module that parses:
 * `export const renderPagePngTask = parseTask('renderPagePng', renderPagePngHere);` — the
 * function that parses on the calling thread (named `…Here`) and the name the worker knows it by.
 * Callers run it with `runParseTask(renderPagePngTask, [bytes, pageIndex, widthPx], options)`
 * (pool.ts): its arguments are the function's parameters and its answer what the function returns,
 * both checked by TypeScript from the function's own type. The worker lists, by name, where each
 * task's module is (`import()` on first use, so a worker that only opens PKCS#12 bundles never loads
 * mupdf), and its list is checked to hold exactly the names of ParseTaskName, each loading the task
 * of that name (`satisfies`). So a name stands in three places (here, the task, the worker's list)
 * that the compiler holds together, and a task's types in one: its function. (The names are written
 * out here because the pool cannot take them from the worker without importing it; a call naming
 * its task by a string and its types by a type argument would leave the pair unchecked.)
 */

/** The tasks, by the name the worker knows them (its TASKS; each declared by parseTask next to its function). */
export type ParseTaskName =
  | 'openPkcs12'
  | 'assertPdfEditable'
  | 'parseJsonBody'
  | 'verifyPdfFile'
  | 'firstPageText'
  | 'readDrawableImage'
  | 'assertOfficeDocument'
  | 'mergePdfs'
  | 'renderPagePng'
  | 'prepareUploadedPdf';

/**
 * A function a task runs (in the worker): any parameters, any result. Its arguments and its result
 * cross between threads by structured clone, so both must be cloneable (a Buffer arrives as a
 * Uint8Array; an error other than AppError arrives as its message).
 */
export type TaskFunction = (...args: never[]) => unknown;

/** A task: its name in the worker, and the function the worker runs for it (on its thread). */
export interface ParseTask<K extends ParseTaskName = ParseTaskName, F extends TaskFunction = TaskFunction> {
  readonly name: K;
  readonly here: F;
}

/**
 * Declares task `name`, which runs `here` in a worker (see the module comment).
 * @param name the task's name, of ParseTaskName; the worker's list loads this declaration under it
 * @param here the function the worker calls with the caller's arguments
 */
export function parseTask<K extends ParseTaskName, F extends TaskFunction>(name: K, here: F): ParseTask<K, F> {
  return { name, here };
}

/**
 * What the pool sends: a task's name and its function's arguments, and the task's slot in
 * `taskClocks` (taskClockThread, taskClockStart), where the worker writes, as the task starts, its
 * kernel thread id and the CPU time it had used until then, so that the pool can tell the CPU time
 * the task uses (pool.ts).
 */
export interface ParseTaskRequest {
  name: ParseTaskName;
  args: unknown[];
  clockSlot: number;
}

/**
 * What the worker answers: the task's value, or its AppError (code, message, details), or an
 * unexpected error's message; whether it failed over the WebAssembly memory limit; and whether
 * the pool should replace this worker now (`recycle`, with its `threadId`).
 */
export type ParseTaskEnvelope = { threadId: number; recycle: boolean } & (
  | { ok: true; value: unknown }
  | {
      ok: false;
      memoryLimit: boolean;
      error: { code: string; message: string; details: Record<string, unknown> | undefined } | null;
      unexpected: string | null;
    }
);

/** What the pool gives each worker as it starts (piscina's `workerData`). */
export interface ParseWorkerData {
  /** Largest WebAssembly memory of the worker, in bytes (PARSE_MEMORY_MB). */
  wasmMemoryBytes: number;
  /** The worker asks to be replaced after a task when it holds more than this (bytes; pool.ts RECYCLE_ABOVE_BYTES). */
  recycleAboveBytes: number;
  /** RETIRE_FLAG_SLOTS flags, a worker's at retireFlag(threadId): 1 while it is to be replaced (pool.ts ParsePool). */
  retireFlags: Int32Array;
  /** CLOCK_SLOTS pairs, a running task's at taskClockThread and taskClockStart of its `clockSlot`. */
  taskClocks: Int32Array;
}

/** Slots of the retirement flags, indexed by a worker's thread id modulo this (see pool.ts ParsePool). */
export const RETIRE_FLAG_SLOTS = 65_536;

/** Slots of the task clocks (see pool.ts ParsePool): more than tasks can run at once (PARSE_WORKERS ≤ 64). */
export const CLOCK_SLOTS = 1_024;

/** The index in `retireFlags` of the worker whose `threadId` (node:worker_threads) this is. */
export const retireFlag = (threadId: number): number => threadId % RETIRE_FLAG_SLOTS;

/** The index in `taskClocks` of the kernel thread id running the task in `clockSlot` (0 until it starts). */
export const taskClockThread = (clockSlot: number): number => 2 * clockSlot;

/** The index in `taskClocks` of that thread's CPU time when the task started (milliseconds). */
export const taskClockStart = (clockSlot: number): number => 2 * clockSlot + 1;
