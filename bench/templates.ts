/**
 * `npm run bench:templates`: the template benchmarks of issue 3 (see bench/README.md). Prints a
 * table, PASS/MISS against the targets, and a final `BENCH_RESULT {json}` line. Targets never fail
 * the run; the exit code is non-zero only when a benchmark could not run or answered wrongly.
 *
 * 1. Template creation from ../shared/fixtures/pdf/pdfjs-tracemonkey.pdf (14 pages, no tags, so the
 *    text-tag scan reads every page and finds nothing): `POST /api/templates/pdf` with the file in
 *    base64 against the service as `npm start` runs it (dist/main.mjs), timed from sending the
 *    request to the last byte of the answer. This is what a user gets, so the targets apply to it.
 *    For information, the same work called in-process (`preparePdfDocuments` + `saveTemplate`, no
 *    HTTP and no GraphQL) in a worker. Baseline: pdfjs-dist extracting the text of every page of
 *    the same bytes, in a worker. Each upload gets a distinct comment appended after %%EOF, so every
 *    run stores a new file and renders a new preview (identical bytes would be deduplicated).
 *    Rounds alternate the order; one warm-up round, then the median of BENCH_TEMPLATE_RUNS.
 * 2. A one-page DOCX (made here from HTML by soffice) through `createRenderer` with the default
 *    configuration (local LibreOffice): the first conversion (new LibreOffice profile) and warm
 *    ones; baseline: `soffice --convert-to pdf` run directly on the same file with a warm profile.
 * 3. Peak RSS: VmHWM from /proc/<pid>/status of each measuring process, read after its runs; the
 *    LibreOffice processes started by the renderer are sampled every 25 ms (their own VmHWM).
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_TEMPLATE_RUNS (default 5),
 * BENCH_DOCX_RUNS (warm conversions, default 3).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  buildService,
  childEnv,
  cpuMs,
  freePort,
  REPO_ROOT,
  spawnNode,
  stopChild,
  waitHealthy,
  type NodeChild,
} from './processes.ts';
import {
  runWorkerOrBench,
  startWorker as startSharedWorker,
  type WorkerHandler as SharedWorkerHandler,
} from './workers.ts';
import { onCleanup, runCleanups, tempDir } from './cleanup.ts';
import { envNumber, median, round, fmt, passMiss, print } from './util.ts';

const TEMPLATE_RUNS = envNumber('BENCH_TEMPLATE_RUNS', 5);
const DOCX_RUNS = envNumber('BENCH_DOCX_RUNS', 3);
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'pdfjs-tracemonkey.pdf');
const FIXTURE_PAGES = 14;
const SIGNET_ENV = { LOG_LEVEL: 'warn', NODE_ENV: 'production', CREATE_DEV_ACCOUNT: 'false' } as const;
const SAMPLE_MS = 25;
const WORKER_ENV = 'BENCH_TEMPLATES_WORKER';

const TARGETS = {
  createMs: 1500,
  createOverBaseline: 3,
  docxMs: 5000,
} as const;

/** One page of HTML with three text tags, one of them in a table cell; soffice turns it into the DOCX. */
const DOCX_SOURCE_HTML = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Service agreement</title></head><body>
<h1>Service agreement</h1>
<p>This agreement is made between the parties named below. Lorem ipsum dolor sit amet, consectetur
adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim
veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.</p>
<table border="1"><tr><td>Client</td><td>{{Client name;role=Client}}</td></tr>
<tr><td>Date</td><td>{{Date;role=Client;type=date}}</td></tr></table>
<p>Signature: {{Signature;role=Client;type=signature}}</p>
</body></html>
`;
const DOCX_TAGS = 3;

// ---------------------------------------------------------------------------------------------
// Workers: this file run again as `node --import tsx bench/templates.ts` with BENCH_TEMPLATES_WORKER
// set, answering requests over the IPC channel one at a time. Each imports only what its
// measurement needs; `idle` imports nothing more, so its VmHWM is the floor every worker carries
// (node + the tsx loader).

type WorkerMode = 'idle' | 'pdfjs' | 'service-path' | 'docx';

type WorkerRequest = { suffix: string } | { docxPath: string; outPath: string };

type WorkerHandler = SharedWorkerHandler<WorkerRequest>;

export interface PdfjsRun {
  ms: number;
  pages: number;
  characters: number;
}

export interface ServicePathRun {
  ms: number;
  prepareMs: number;
  saveMs: number;
  pages: number;
  fields: number;
}

export interface DocxRun {
  ms: number;
  bytes: number;
}

async function createWorkerHandler(mode: WorkerMode): Promise<WorkerHandler> {
  const noClose = async () => {};
  switch (mode) {
    case 'idle':
      return { run: async () => ({}), close: noClose };

    case 'pdfjs': {
      const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
      const original = await fs.readFile(FIXTURE);
      return {
        close: noClose,
        async run(request): Promise<PdfjsRun> {
          // A fresh copy each run: pdfjs may transfer (detach) the buffer it is given.
          const data = new Uint8Array(Buffer.concat([original, Buffer.from(suffixOf(request))]));
          const started = performance.now();
          // In Node pdfjs runs its "worker" on this thread (no worker file to fetch).
          const doc = await getDocument({ data, useWorkerFetch: false, isEvalSupported: false, verbosity: 0 }).promise;
          let characters = 0;
          for (let number = 1; number <= doc.numPages; number += 1) {
            const page = await doc.getPage(number);
            const text = await page.getTextContent();
            for (const item of text.items) if ('str' in item) characters += item.str.length;
            page.cleanup();
          }
          const pages = doc.numPages;
          await doc.destroy();
          return { ms: performance.now() - started, pages, characters };
        },
      };
    }

    case 'service-path': {
      const [
        { loadConfig },
        { createDb },
        { createLocalStorage },
        { createRenderer },
        { preparePdfDocuments },
        { saveTemplate },
        { createSideEffects },
      ] = await Promise.all([
        import('../src/config.ts'),
        import('../src/db/client.ts'),
        import('../src/documents/storage.ts'),
        import('../src/rendering/renderer.ts'),
        import('../src/templates/prepare-documents.ts'),
        import('../src/templates/save-template.ts'),
        import('../src/events/events.ts'),
      ]);
      const config = loadConfig();
      if (!config.databaseUrl) throw new Error('the service-path worker needs DATABASE_URL');
      const userId = Number(process.env.BENCH_USER_ID);
      const db = createDb(config.databaseUrl, { poolSize: 10 });
      const storage = createLocalStorage(path.join(config.dataDir, 'files'));
      // Not used for PDFs; createRenderer starts nothing until a conversion needs it.
      const renderer = createRenderer(config, silentLogger);
      const { accountId } = await db.user.findUniqueOrThrow({ where: { id: userId }, select: { accountId: true } });
      const original = await fs.readFile(FIXTURE);
      return {
        async close() {
          await renderer.close();
          await db.$disconnect();
        },
        async run(request): Promise<ServicePathRun> {
          const file = Buffer.concat([original, Buffer.from(suffixOf(request))]).toString('base64');
          const started = performance.now();
          // As the createTemplateFromPdf resolver calls them (src/graphql/schema/template-mutations.ts).
          const documents = await preparePdfDocuments({ config, renderer, accountId }, [
            { name: 'tracemonkey.pdf', file },
          ]);
          const prepared = performance.now();
          await saveTemplate(
            // As in the service: template.created is recorded in the outbox (no endpoint here, so no job).
            { db, storage, effects: createSideEffects({ db, jobs: { relayOutbox: () => undefined } }) },
            {
              accountId,
              userId,
              source: 'api',
              documents,
              requestFields: [
                { documentIndex: 0, fields: [], path: 'documents[0].fields' },
                { fields: [], path: 'fields' },
              ],
            },
          );
          const saved = performance.now();
          return {
            ms: saved - started,
            prepareMs: prepared - started,
            saveMs: saved - prepared,
            pages: documents[0]!.pages.length,
            fields: documents[0]!.tagged.length,
          };
        },
      };
    }

    case 'docx': {
      const [{ loadConfig }, { createRenderer }] = await Promise.all([
        import('../src/config.ts'),
        import('../src/rendering/renderer.ts'),
      ]);
      // The default configuration: the local renderer, whatever GOTENBERG_URL this shell has.
      const renderer = createRenderer(loadConfig({ ...process.env, GOTENBERG_URL: '' }), silentLogger);
      return {
        close: () => renderer.close(),
        async run(request): Promise<DocxRun> {
          if (!('docxPath' in request)) throw new Error('docx worker: docxPath expected');
          const docx = await fs.readFile(request.docxPath);
          const started = performance.now();
          const pdf = await renderer.docxToPdf({ docx, filename: 'agreement.docx' });
          const ms = performance.now() - started;
          await fs.writeFile(request.outPath, pdf);
          return { ms, bytes: pdf.length };
        },
      };
    }
  }
}

function suffixOf(request: WorkerRequest): string {
  if (!('suffix' in request)) throw new Error('suffix expected');
  return request.suffix;
}

const silentLogger = { debug() {}, info() {}, warn() {}, error() {} };

const startWorker = (mode: WorkerMode, env: NodeJS.ProcessEnv) =>
  startSharedWorker<WorkerRequest>('bench/templates.ts', WORKER_ENV, mode, env);

// ---------------------------------------------------------------------------------------------
// Memory

/** VmHWM (peak resident set) and VmRSS of a process in MB (MiB), from /proc/<pid>/status. */
async function memoryMb(pid: number): Promise<{ hwmMb: number; rssMb: number; name: string }> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  // A zombie (exited, not yet reaped) has no Vm* lines: 0.
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? 0);
  return { hwmMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024, name: /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?' };
}

/** Every live process below `rootPid` (children, grandchildren …), from /proc/<pid>/stat. */
async function descendants(rootPid: number): Promise<number[]> {
  const parentOf = new Map<number, number>();
  const entries = await fs.readdir('/proc');
  await Promise.all(
    entries
      .filter((entry) => /^\d+$/.test(entry))
      .map(async (entry) => {
        try {
          const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8');
          parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
        } catch {
          // gone meanwhile
        }
      }),
  );
  const found: number[] = [];
  let frontier = [rootPid];
  while (frontier.length > 0) {
    const next: number[] = [];
    for (const [pid, ppid] of parentOf) if (frontier.includes(ppid)) next.push(pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/**
 * Samples the processes below `rootPid` every SAMPLE_MS until stopped: the largest VmHWM any of
 * them reached (a kernel high-water mark, so only growth in its last ≤ 25 ms can be missed) and
 * the largest sum of VmRSS over them at one sample.
 */
function sampleDescendants(rootPid: number) {
  let running = true;
  const peak = { hwmMb: 0, name: '', sumRssMb: 0, processes: new Set<string>() };
  const loop = (async () => {
    while (running) {
      let sum = 0;
      for (const pid of await descendants(rootPid)) {
        try {
          const memory = await memoryMb(pid);
          peak.processes.add(memory.name);
          sum += memory.rssMb;
          if (memory.hwmMb > peak.hwmMb) Object.assign(peak, { hwmMb: memory.hwmMb, name: memory.name });
        } catch {
          // exited between the listing and the read
        }
      }
      peak.sumRssMb = Math.max(peak.sumRssMb, sum);
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { hwmMb: peak.hwmMb, name: peak.name, sumRssMb: peak.sumRssMb, processes: [...peak.processes] };
    },
  };
}

// ---------------------------------------------------------------------------------------------

interface Measured {
  ms: number;
  /** CPU time of the measuring process (all threads) during the run, ms. */
  cpuMs: number;
}

async function main(): Promise<number> {
  const started = performance.now();
  const problems: string[] = [];
  const original = await fs.readFile(FIXTURE);
  print(
    `Signet template benchmarks — node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}-${os.arch()}`,
  );

  // --- set-up -------------------------------------------------------------------------------
  print('\n[setup] bench database, Signet (dist/main.mjs), workers …');
  const { createBenchDatabase, redactUrl } = await import('./bench-database.ts');
  const database = await createBenchDatabase(onCleanup);
  print(
    `  ${database.kind === 'external' ? 'DATABASE_URL server' : 'embedded PostgreSQL (temp dir)'}: ` +
      `${redactUrl(database.url)}`,
  );
  const signet = await startSignet(database.url);
  const signetAfterStart = await memoryMb(signet.child.pid);
  print(`  Signet pid ${signet.child.pid} ${signet.url}; VmRSS after start ${fmt(signetAfterStart.rssMb, 1)} MB`);

  const workerData = await tempDir('signet-bench-tpl-worker-');
  const servicePath = await startWorker(
    'service-path',
    childEnv({
      ...SIGNET_ENV,
      DATABASE_URL: database.url,
      DATA_DIR: workerData,
      BENCH_USER_ID: String(database.user.id),
    }),
  );
  const pdfjs = await startWorker('pdfjs', childEnv({ NODE_ENV: 'production' }));
  const idle = await startWorker('idle', childEnv({ NODE_ENV: 'production' }));
  const workerFloorMb = (await memoryMb(idle.pid)).hwmMb;
  await idle.stop();

  // --- 1. template creation ----------------------------------------------------------------
  print(
    `\n[templates] ${path.basename(FIXTURE)} (${FIXTURE_PAGES} pages, ${fmt(original.length / 1024, 0)} KB): 1 ` +
      `warm-up round + ${TEMPLATE_RUNS}, order alternating`,
  );
  let firstUpload: Measured | undefined;
  const runs = {
    http: [] as Measured[],
    servicePath: [] as (Measured & ServicePathRun)[],
    pdfjs: [] as (Measured & PdfjsRun)[],
  };
  type Step = () => Promise<void>;
  for (let round = 0; round <= TEMPLATE_RUNS; round += 1) {
    const warmUp = round === 0;
    const suffix = () => `\n%signet-bench ${round} ${randomBytes(8).toString('hex')}\n`;
    const httpStep: Step = async () => {
      const measured = await createOverHttp(
        signet,
        database.apiKey,
        Buffer.concat([original, Buffer.from(suffix())]),
        warmUp,
      );
      if (!warmUp) runs.http.push(measured);
      else firstUpload = measured;
    };
    const servicePathStep: Step = async () => {
      const measured = await timed(servicePath.pid, () => servicePath.call<ServicePathRun>({ suffix: suffix() }));
      if (measured.pages !== FIXTURE_PAGES || measured.fields !== 0)
        throw new Error(`in-process creation read ${measured.pages} pages, ${measured.fields} fields`);
      if (!warmUp) runs.servicePath.push(measured);
    };
    const pdfjsStep: Step = async () => {
      const measured = await timed(pdfjs.pid, () => pdfjs.call<PdfjsRun>({ suffix: suffix() }));
      if (measured.pages !== FIXTURE_PAGES || measured.characters < 10_000)
        throw new Error(`pdfjs read ${measured.pages} pages, ${measured.characters} characters`);
      if (!warmUp) runs.pdfjs.push(measured);
    };
    const steps = [httpStep, servicePathStep, pdfjsStep];
    for (const step of round % 2 === 0 ? steps : steps.reverse()) await step();
    const last = (list: Measured[]) => (warmUp ? '' : fmt(list.at(-1)!.ms, 0).padStart(6));
    print(
      warmUp
        ? '  warm-up round done'
        : `  round ${round}  POST ${last(runs.http)} ms   in-process ${last(runs.servicePath)} ms   pdfjs baseline ` +
            `${last(runs.pdfjs)} ms`,
    );
  }
  if (signet.child.exited()) problems.push(`the Signet server exited:\n${signet.child.output()}`);

  const signetPeak = await memoryMb(signet.child.pid);
  const servicePathPeak = await memoryMb(servicePath.pid);
  const pdfjsPeak = await memoryMb(pdfjs.pid);
  await servicePath.stop();
  await pdfjs.stop();
  await signet.stop();

  // --- 2. DOCX → PDF ---------------------------------------------------------------------------
  print(
    `\n[docx] one-page DOCX through createRenderer (default configuration: local LibreOffice); 1 first + ` +
      `${DOCX_RUNS} warm conversions`,
  );
  const docx = await makeDocx();
  print(
    `  ${path.basename(docx.docxPath)}: ${fmt(docx.bytes / 1024, 1)} KB, made by soffice from HTML (` +
      `${fmt(docx.makeMs / 1000, 2)} s); direct soffice → PDF ${fmt(docx.directMs / 1000, 2)} s`,
  );
  const docxWorker = await startWorker('docx', childEnv({ NODE_ENV: 'production' }));
  const docxRuns: (Measured & DocxRun)[] = [];
  const sampler = sampleDescendants(docxWorker.pid);
  for (let i = 0; i <= DOCX_RUNS; i += 1) {
    const outPath = path.join(docx.dir, `out-${i}.pdf`);
    const measured = await timed(docxWorker.pid, () => docxWorker.call<DocxRun>({ docxPath: docx.docxPath, outPath }));
    docxRuns.push(measured);
    print(
      `  ${i === 0 ? 'first' : `warm ${i}`}  ${fmt(measured.ms / 1000, 2)} s  (${fmt(measured.bytes / 1024, 1)} KB ` +
        `PDF)`,
    );
    if (i === 0) await checkDocxPdf(await fs.readFile(outPath));
  }
  const libreOfficePeak = await sampler.stop();
  const docxWorkerPeak = await memoryMb(docxWorker.pid);
  await docxWorker.stop();

  // --- report ---------------------------------------------------------------------------------
  const summarise = (list: Measured[]) => ({
    medianMs: round(median(list.map((r) => r.ms)), 1),
    minMs: round(Math.min(...list.map((r) => r.ms)), 1),
    maxMs: round(Math.max(...list.map((r) => r.ms)), 1),
    cpuMs: round(median(list.map((r) => r.cpuMs)), 1),
    runsMs: list.map((r) => round(r.ms, 1)),
  });
  const http = summarise(runs.http);
  const inProcess = {
    ...summarise(runs.servicePath),
    prepareMs: round(median(runs.servicePath.map((r) => r.prepareMs)), 1),
    saveMs: round(median(runs.servicePath.map((r) => r.saveMs)), 1),
  };
  const baseline = summarise(runs.pdfjs);
  const createRatio = http.medianMs / baseline.medianMs;
  const firstDocx = docxRuns[0]!;
  const warmDocx = docxRuns.slice(1);
  const docxResult = {
    firstMs: round(firstDocx.ms, 0),
    // No CPU column: the conversion's CPU is spent in LibreOffice, not in the worker.
    warm: (({ cpuMs: _workerCpu, ...rest }) => rest)(summarise(warmDocx)),
    directSofficeMs: round(docx.directMs, 0),
    targetMs: TARGETS.docxMs,
    passFirst: firstDocx.ms <= TARGETS.docxMs,
    passWarm: median(warmDocx.map((r) => r.ms)) <= TARGETS.docxMs,
  };
  const rss = {
    signetAfterStartMb: round(signetAfterStart.rssMb, 1),
    signetPeakMb: round(signetPeak.hwmMb, 1),
    inProcessWorkerPeakMb: round(servicePathPeak.hwmMb, 1),
    pdfjsWorkerPeakMb: round(pdfjsPeak.hwmMb, 1),
    workerFloorMb: round(workerFloorMb, 1),
    docxWorkerPeakMb: round(docxWorkerPeak.hwmMb, 1),
    libreOfficePeakMb: round(libreOfficePeak.hwmMb, 1),
    libreOfficeProcess: libreOfficePeak.name,
    docxTreePeakMb: round(docxWorkerPeak.hwmMb + libreOfficePeak.sumRssMb, 1),
  };

  const line = (label: string, s: ReturnType<typeof summarise>, extra = '') =>
    print(
      `  ${label.padEnd(44)} ${fmt(s.medianMs, 0).padStart(6)} ${fmt(s.minMs, 0).padStart(6)} ` +
        `${fmt(s.maxMs, 0).padStart(6)} ${fmt(s.cpuMs, 0).padStart(7)}   ${extra}`,
    );
  print(`\n${'='.repeat(100)}`);
  print(
    `Template from ${path.basename(FIXTURE)} (${FIXTURE_PAGES} pages) — median of ${TEMPLATE_RUNS} after a warm-up; ` +
      `database ${database.kind}`,
  );
  print(
    `  ${''.padEnd(44)} ${'median'.padStart(6)} ${'min'.padStart(6)} ${'max'.padStart(6)} ${'CPU ms'.padStart(7)}   ` +
      `(ms; CPU = the measuring process, median)`,
  );
  line(
    'POST /api/templates/pdf (dist service, HTTP)',
    http,
    `target ≤ ${TARGETS.createMs} ms   ${passMiss(http.medianMs <= TARGETS.createMs)}`,
  );
  line(
    'in-process preparePdfDocuments + saveTemplate',
    inProcess,
    `(prepare ${fmt(inProcess.prepareMs, 0)} + save ${fmt(inProcess.saveMs, 0)}; information)`,
  );
  line('baseline: pdfjs-dist text of every page', baseline);
  print(`  first upload after the service started (the warm-up round): ${fmt(firstUpload!.ms, 0)} ms (information)`);
  print(
    `  POST / baseline        ${fmt(createRatio, 2).padStart(5)}×   target ≤ ${TARGETS.createOverBaseline}×   ` +
      `${passMiss(createRatio <= TARGETS.createOverBaseline)}`,
  );
  print(`  in-process / baseline  ${fmt(inProcess.medianMs / baseline.medianMs, 2).padStart(5)}×   (information)`);
  print('DOCX → PDF, one page, local LibreOffice through createRenderer');
  print(
    `  first conversion (new profile)   ${fmt(docxResult.firstMs / 1000, 2).padStart(5)} s   target ≤ ` +
      `${TARGETS.docxMs / 1000} s   ${passMiss(docxResult.passFirst)}`,
  );
  print(
    `  warm (median of ${DOCX_RUNS})              ${fmt(docxResult.warm.medianMs / 1000, 2).padStart(5)} s   target ` +
      `≤ ${TARGETS.docxMs / 1000} s   ${passMiss(docxResult.passWarm)}` +
      `   (${docxResult.warm.runsMs.map((ms) => fmt(ms / 1000, 2)).join(', ')} s)`,
  );
  print(`  baseline: soffice --convert-to pdf run directly, warm profile  ${fmt(docx.directMs / 1000, 2)} s`);
  print('Peak RSS (VmHWM, MB)');
  print(
    `  Signet service process: ${fmt(rss.signetPeakMb, 1)} after the ${TEMPLATE_RUNS + 1} uploads (VmRSS after ` +
      `start ${fmt(rss.signetAfterStartMb, 1)})`,
  );
  print(
    `  in-process worker ${fmt(rss.inProcessWorkerPeakMb, 1)}, pdfjs baseline worker ` +
      `${fmt(rss.pdfjsWorkerPeakMb, 1)}  (each worker = node + tsx: ${fmt(rss.workerFloorMb, 1)} with nothing loaded)`,
  );
  print(
    `  DOCX: node worker ${fmt(rss.docxWorkerPeakMb, 1)}; LibreOffice ${fmt(rss.libreOfficePeakMb, 1)} (` +
      `${rss.libreOfficeProcess}, sampled every ${SAMPLE_MS} ms); ` +
      `worker + LibreOffice processes together ≤ ${fmt(rss.docxTreePeakMb, 1)}`,
  );
  for (const problem of problems) print(`PROBLEM: ${problem}`);
  print('='.repeat(100));

  await runCleanups();
  const result = {
    node: process.version,
    cpus: os.cpus().length,
    database: database.kind,
    settings: {
      templateRuns: TEMPLATE_RUNS,
      docxWarmRuns: DOCX_RUNS,
      signetLogLevel: SIGNET_ENV.LOG_LEVEL,
      signetNodeEnv: SIGNET_ENV.NODE_ENV,
    },
    template: {
      fixture: path.basename(FIXTURE),
      pages: FIXTURE_PAGES,
      http,
      firstUploadMs: round(firstUpload!.ms, 1),
      inProcess,
      baseline,
      ratio: {
        value: round(createRatio, 3),
        target: TARGETS.createOverBaseline,
        pass: createRatio <= TARGETS.createOverBaseline,
      },
      targetMs: TARGETS.createMs,
      pass: http.medianMs <= TARGETS.createMs,
    },
    docx: docxResult,
    rss,
    problems,
    totalS: round((performance.now() - started) / 1000, 1),
  };
  print(`BENCH_RESULT ${JSON.stringify(result)}`);
  return problems.length > 0 ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// The service

interface Signet {
  child: NodeChild;
  url: string;
  stop(): Promise<void>;
}

/** Builds and starts dist/main.mjs as `npm start` runs it, on the bench database, files in a temp DATA_DIR. */
async function startSignet(databaseUrl: string): Promise<Signet> {
  const dataDir = await tempDir('signet-bench-tpl-data-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  buildService();
  const child = spawnNode(
    'dist/main.mjs',
    childEnv({ ...SIGNET_ENV, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' }),
  );
  const stop = onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 60_000);
  return { child, url, stop };
}

/**
 * `POST /api/templates/pdf` with `{name, documents: [{name, file: <base64>}]}`; the time runs from
 * sending the request (body already encoded, as a client would have it) to the last byte of the
 * answer. Checks the answer is a template with one document and no fields.
 */
async function createOverHttp(signet: Signet, apiKey: string, pdf: Buffer, first: boolean): Promise<Measured> {
  const body = JSON.stringify({
    name: 'tracemonkey',
    documents: [{ name: 'tracemonkey.pdf', file: pdf.toString('base64') }],
  });
  return timed(signet.child.pid, async () => {
    const response = await fetch(`${signet.url}/api/templates/pdf`, {
      method: 'POST',
      headers: { 'x-auth-token': apiKey, 'content-type': 'application/json', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (response.status !== 200)
      throw new Error(`POST /api/templates/pdf answered ${response.status}: ${text.slice(0, 500)}`);
    const template = JSON.parse(text) as {
      id?: number;
      fields?: unknown[];
      documents?: { url?: string; preview_image_url?: string | null }[];
    };
    const doc = template.documents?.[0];
    if (
      typeof template.id !== 'number' ||
      template.documents?.length !== 1 ||
      template.fields?.length !== 0 ||
      !doc?.url ||
      !doc.preview_image_url
    ) {
      throw new Error(`POST /api/templates/pdf answered an unexpected template: ${text.slice(0, 500)}`);
    }
    if (first) {
      // Once: the preview the upload rendered is there (and the signed URL works).
      const preview = await fetch(doc.preview_image_url, { signal: AbortSignal.timeout(10_000) });
      const png = Buffer.from(await preview.arrayBuffer());
      if (preview.status !== 200 || png.readUInt32BE(0) !== 0x89504e47)
        throw new Error(`preview_image_url answered ${preview.status}`);
    }
    return {};
  });
}

/** Runs `fn`, measuring wall time and the CPU time `pid` used meanwhile. */
async function timed<T extends object>(pid: number, fn: () => Promise<T>): Promise<T & Measured> {
  const cpuBefore = await cpuMs(pid);
  const started = performance.now();
  const result = await fn();
  const ms = performance.now() - started;
  const cpu = (await cpuMs(pid)) - cpuBefore;
  // A worker reports its own `ms` (measured inside it, without the IPC round trip); keep that one.
  return { ms, ...result, cpuMs: cpu };
}

// ---------------------------------------------------------------------------------------------
// The DOCX

/**
 * Writes DOCX_SOURCE_HTML to a temp dir and has soffice convert it to DOCX (as Word's "MS Word 2007
 * XML"), then times a direct `soffice --convert-to pdf` of that DOCX with the now warm profile
 * (the renderer's baseline). Not part of the measured conversions.
 */
async function makeDocx(): Promise<{ dir: string; docxPath: string; bytes: number; makeMs: number; directMs: number }> {
  const dir = await tempDir('signet-bench-docx-');
  const profile = pathToFileURL(path.join(dir, 'profile')).href;
  const common = [
    `-env:UserInstallation=${profile}`,
    '--headless',
    '--invisible',
    '--norestore',
    '--nologo',
    '--nodefault',
    '--nolockcheck',
  ];
  const htmlPath = path.join(dir, 'agreement.html');
  await fs.writeFile(htmlPath, DOCX_SOURCE_HTML);
  let started = performance.now();
  await soffice([...common, '--convert-to', 'docx:MS Word 2007 XML', '--outdir', dir, htmlPath]);
  const makeMs = performance.now() - started;
  const docxPath = path.join(dir, 'agreement.docx');
  const { size } = await fs.stat(docxPath);
  started = performance.now();
  await soffice([...common, '--convert-to', 'pdf', '--outdir', path.join(dir, 'direct'), docxPath]);
  const directMs = performance.now() - started;
  await checkDocxPdf(await fs.readFile(path.join(dir, 'direct', 'agreement.pdf')));
  return { dir, docxPath, bytes: size, makeMs, directMs };
}

function soffice(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      process.env.SOFFICE_PATH || 'soffice',
      args,
      { timeout: 120_000, env: { ...process.env, SAL_USE_VCLPLUGIN: 'svp' } },
      (error, _stdout, stderr) => {
        if (error) reject(new Error(`soffice ${args.slice(-4).join(' ')} failed: ${error.message}\n${stderr}`));
        else resolve();
      },
    );
  });
}

/** The converted DOCX is one page and its text layer still carries the three tags. */
async function checkDocxPdf(pdf: Buffer): Promise<void> {
  const [{ inspectPdf }, { extractTextTags }] = await Promise.all([
    import('../src/documents/pdf.ts'),
    import('../src/documents/text-tags.ts'),
  ]);
  const bytes = new Uint8Array(pdf);
  const { pageCount } = await inspectPdf(bytes, 'the converted DOCX');
  const { fields } = await extractTextTags(bytes, { label: 'the converted DOCX' });
  if (pageCount !== 1 || fields.length !== DOCX_TAGS)
    throw new Error(
      `the converted DOCX has ${pageCount} page(s) and ${fields.length} text tag(s), expected 1 and ${DOCX_TAGS}`,
    );
}

// ---------------------------------------------------------------------------------------------
// Small helpers

runWorkerOrBench<WorkerMode, WorkerRequest>(WORKER_ENV, createWorkerHandler, main);
