/**
 * pdf-lib's reading of an uploaded PDF, on a worker thread (issue 12, "Broken inputs → 4xx" and
 * "bounded cost per request").
 *
 * Why a worker: pdf-lib parses every object of a file (about 30 ms per MB, all of it on the thread
 * that calls it), and a damaged or crafted file can make a JavaScript parser run far longer (its
 * PNG decoder never returns on some damaged images: src/documents/drawable-image.ts). On a
 * worker the event loop keeps answering, a read that runs over READ_TIMEOUT_MS or over the
 * worker's heap limit ends as the document's fault (the worker is replaced), and the parse runs
 * beside mupdf's text-tag scan instead of after it (src/templates/prepare-documents.ts), so a
 * template upload does not wait for both in turn.
 *
 * Library: Node's own `worker_threads`. One worker with a queue is all that is needed here, so a
 * pool library (piscina) would add a dependency and a worker file that the service bundle
 * (scripts/build.mjs: one ES module) would have to ship beside it; the worker's code is a short
 * CommonJS string instead, and it loads pdf-lib from the path this module resolves.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Longest a single read may take, in milliseconds, before it counts as the document's fault. */
export const READ_TIMEOUT_MS = 20_000;
/** Heap of the worker, in megabytes: a file that needs more is refused, the service unharmed. */
const WORKER_HEAP_MB = 512;

/** What pdf-lib read: the pages of its page tree, or why it could not. */
export type PdfLibReading = { pageCount: number } | { error: string };

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { PDFDocument, ParseSpeeds } = require(workerData.pdfLibPath);
// pdf-lib reports every object it skips on the console; the caller gets the outcome instead.
console.log = console.warn = console.error = () => {};
parentPort.on('message', async (bytes) => {
  try {
    const doc = await PDFDocument.load(bytes, { updateMetadata: false, parseSpeed: ParseSpeeds.Fastest });
    parentPort.postMessage({ pageCount: doc.getPages().length });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error).split('\\n')[0] });
  }
});
`;

interface Job {
  bytes: Uint8Array;
  resolve(reading: PdfLibReading): void;
}

let worker: Worker | undefined;
const queue: Job[] = [];
let current: { job: Job; timer: NodeJS.Timeout } | undefined;

/**
 * Reads `bytes` with pdf-lib (`PDFDocument.load`, fastest parse, metadata untouched) on the
 * worker, one file at a time in arrival order.
 * @returns `{ pageCount }` (pages in pdf-lib's page tree), or `{ error }` when pdf-lib throws,
 *   runs over READ_TIMEOUT_MS, or exhausts the worker's heap. Never rejects.
 */
export function readWithPdfLib(bytes: Uint8Array): Promise<PdfLibReading> {
  return new Promise((resolve) => {
    queue.push({ bytes, resolve });
    next();
  });
}

function next(): void {
  if (current || queue.length === 0) return;
  const job = queue.shift()!;
  const timer = setTimeout(
    () => finish({ error: `it could not be read within ${READ_TIMEOUT_MS / 1000} s` }, true),
    READ_TIMEOUT_MS,
  );
  current = { job, timer };
  // A copy: the caller keeps its bytes (they are stored next), the worker gets its own.
  const copy = new Uint8Array(job.bytes);
  startedWorker().postMessage(copy, [copy.buffer]);
}

/** Settles the job in flight; `replace` ends the worker (it is stuck or gone) and starts another on demand. */
function finish(reading: PdfLibReading, replace = false): void {
  if (!current) return;
  clearTimeout(current.timer);
  const { job } = current;
  current = undefined;
  if (replace && worker) {
    const stuck = worker;
    worker = undefined;
    void stuck.terminate();
  }
  job.resolve(reading);
  next();
}

function startedWorker(): Worker {
  if (worker) return worker;
  const pdfLibPath = createRequire(import.meta.url).resolve('pdf-lib');
  const started = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { pdfLibPath },
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
  started.on('message', (reading: PdfLibReading) => finish(reading));
  // A worker that fails (out of heap) or exits is not used again; the read in flight was its cause.
  const gone = (reading: PdfLibReading) => {
    if (worker !== started) return;
    worker = undefined;
    finish(reading);
  };
  started.on('error', (error) =>
    gone({
      error: /heap|memory/i.test(error.message) ? 'it needs too much memory to read' : error.message.split('\n')[0],
    }),
  );
  started.on('exit', () => gone({ error: 'it could not be read' }));
  // Idle, it must not keep the process alive (the service and the CLI stop as before); after the
  // listeners, which would otherwise hold it again.
  started.unref();
  worker = started;
  return started;
}
