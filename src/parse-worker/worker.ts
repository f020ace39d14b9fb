/**
 * The parse pool's worker (src/parse-pool/pool.ts): the tasks that parse what callers send, run
 * off the event loop. An entry point, like main.ts: the pool loads it by file name
 * (dist/parse-worker.mjs, bundled by scripts/build.mjs; from source through worker-loader.mjs),
 * and it imports each task's module on the task's first use, so a worker that only opens PKCS#12
 * bundles never loads mupdf. Only its loader imports it: the pool and the tasks' modules share with
 * it only the protocol in src/parse-pool/tasks.ts (names, request, answer, shared memory), so this
 * file stands above the modules it imports and every import runs down.
 *
 * Memory: the pool gives the worker a JavaScript heap of PARSE_MEMORY_MB (`resourceLimits`); the
 * WebAssembly memory mupdf allocates in is outside that heap, so `WebAssembly.Memory#grow` is
 * capped here at the same size: a growth beyond it fails as an allocation failure inside mupdf
 * (its allocator returns NULL and mupdf throws), and a task that fails after that is answered as
 * over the memory limit. After each task the worker reports whether the memory it holds (WebAssembly,
 * JS heap, buffers) is over the pool's recycling threshold; the pool then replaces it, which is the
 * only way a WebAssembly memory goes back to the system.
 */
import { getHeapStatistics } from 'node:v8';
import { threadId, workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { AppError } from '../errors.ts';
import {
  type ParseTask,
  type ParseTaskEnvelope,
  type ParseTaskName,
  type ParseTaskRequest,
  type ParseWorkerData,
  retireFlag,
  taskClockStart,
  taskClockThread,
} from '../parse-pool/tasks.ts';
import { kernelThreadId, threadCpuMs } from '../parse-pool/thread-clock.ts';

const { wasmMemoryBytes, recycleAboveBytes, retireFlags, taskClocks } = workerData as ParseWorkerData;
Atomics.store(retireFlags, retireFlag(threadId), 0);

/** This thread in the kernel, for the pool's reading of its CPU time (thread-clock.ts). */
const tid = kernelThreadId();

/** Every WebAssembly memory that has grown in this worker (mupdf has one). */
const memories = new Set<WebAssembly.Memory>();
/** A growth was refused during the current task. */
let wasmLimitHit = false;
const grow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, delta: number): number {
  memories.add(this);
  if (this.buffer.byteLength + delta * 65_536 > wasmMemoryBytes) {
    wasmLimitHit = true;
    throw new RangeError(`WebAssembly memory limit of ${wasmMemoryBytes} bytes (PARSE_MEMORY_MB)`);
  }
  return grow.call(this, delta);
};

// mupdf reports each repair and pdf-lib each object it skips on the console; a task's outcome is its answer.
console.log = console.info = console.warn = console.error = () => {};

const wasmBytes = () => [...memories].reduce((sum, memory) => sum + memory.buffer.byteLength, 0);

/**
 * Where each task is declared (tasks.ts parseTask, next to its function), by name: its module is
 * imported when the task first runs. Checked to hold exactly the names of ParseTaskName, each
 * loading the task of that name; the functions' types are the modules' own.
 */
const TASKS = {
  /** src/signing/pkcs12.ts openPkcs12Parts: a PKCS#12 opened, its key and certificates as DER. */
  openPkcs12: async () => (await import('../signing/pkcs12.ts')).openPkcs12Task,
  /** src/documents/pdf.ts assertPdfEditableHere: pdf-lib reads a PDF and finds its pages. */
  assertPdfEditable: async () => (await import('../documents/pdf.ts')).assertPdfEditableTask,
  /** src/http/json-body.ts parseJsonBodyHere: a large request body's JSON. */
  parseJsonBody: async () => (await import('../http/json-body.ts')).parseJsonBodyTask,
  /** src/signing/verify-pdf.ts verifyPdfFileHere: the signatures of a PDF, checked, and its SHA-256 (/tools/verify). */
  verifyPdfFile: async () => (await import('../signing/verify-pdf.ts')).verifyPdfFileTask,
  /** src/documents/pdf.ts firstPageTextHere: the text of a PDF's first page. */
  firstPageText: async () => (await import('../documents/pdf.ts')).firstPageTextTask,
  /** src/documents/drawable-image.ts readDrawableImageHere: an image value checked and made drawable. */
  readDrawableImage: async () => (await import('../documents/drawable-image.ts')).readDrawableImageTask,
  /** src/rendering/office-document.ts assertOfficeDocumentHere: a DOCX (ZIP) within its limits, before conversion. */
  assertOfficeDocument: async () => (await import('../rendering/office-document.ts')).assertOfficeDocumentTask,
  /** src/documents/merge-pdfs.ts mergePdfsHere: PDFs merged into one. */
  mergePdfs: async () => (await import('../documents/merge-pdfs.ts')).mergePdfsTask,
  /** src/documents/pdf.ts renderPagePngHere: a page as a PNG (previews). */
  renderPagePng: async () => (await import('../documents/pdf.ts')).renderPagePngTask,
  /** src/documents/uploaded-pdf.ts prepareUploadedPdfHere: an uploaded PDF made ready to keep. */
  prepareUploadedPdf: async () => (await import('../documents/uploaded-pdf.ts')).prepareUploadedPdfTask,
} satisfies { [K in ParseTaskName]: () => Promise<ParseTask<K>> };

/**
 * The buffers of the byte arrays a task's value holds (itself, or in its properties and arrays, two
 * levels down) that are their whole buffer: moved to the pool, not copied.
 */
function transferables(value: unknown, depth = 0, found = new Set<ArrayBuffer>()): Set<ArrayBuffer> {
  if (value instanceof Uint8Array) {
    if (value.buffer instanceof ArrayBuffer && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength)
      found.add(value.buffer);
  } else if (depth < 2 && value && typeof value === 'object') {
    for (const item of Object.values(value)) transferables(item, depth + 1, found);
  }
  return found;
}

/** Runs one task (piscina calls this, one task at a time per worker); its byte arrays are moved, not copied. */
export default async function runParseTask(request: ParseTaskRequest): Promise<ParseTaskEnvelope> {
  const envelope = await run(request);
  const buffers = envelope.ok ? [...transferables(envelope.value)] : [];
  if (buffers.length === 0) return envelope;
  // piscina moves what such an object lists and answers its value.
  return move({ [transferableSymbol]: buffers, [valueSymbol]: envelope }) as unknown as ParseTaskEnvelope;
}

async function run(request: ParseTaskRequest): Promise<ParseTaskEnvelope> {
  wasmLimitHit = false;
  if (tid !== 0) {
    Atomics.store(taskClocks, taskClockStart(request.clockSlot), threadCpuMs(tid) ?? 0);
    Atomics.store(taskClocks, taskClockThread(request.clockSlot), tid);
  }
  let envelope: ParseTaskEnvelope;
  try {
    const load = TASKS[request.name] as (() => Promise<ParseTask>) | undefined;
    if (!load) throw new Error(`unknown parse task ${request.name}`);
    const here = (await load()).here as (...args: unknown[]) => unknown;
    envelope = { threadId, recycle: false, ok: true, value: await here(...request.args) };
  } catch (error) {
    envelope = {
      threadId,
      recycle: false,
      ok: false,
      memoryLimit: wasmLimitHit,
      error: error instanceof AppError ? { code: error.code, message: error.message, details: error.details } : null,
      unexpected: error instanceof AppError ? null : String((error as Error)?.stack ?? error),
    };
  }
  // What the worker holds: its WebAssembly memory, its JavaScript heap as committed, and the buffers
  // outside the heap (the task's byte arrays), which the next collection may or may not free.
  const heap = getHeapStatistics();
  const held = wasmBytes() + heap.total_physical_size + heap.external_memory;
  if (wasmLimitHit || held > recycleAboveBytes) {
    envelope.recycle = true;
    // Before answering: piscina may hand this worker its next task before the answer reaches the pool.
    Atomics.store(retireFlags, retireFlag(threadId), 1);
  }
  return envelope;
}
