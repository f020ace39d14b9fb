/**
 * `npm run bench:form-weight`: the signing form's first load (issue 24 §6; bench/README.md
 * "Signing form weight (issue 24)"). Unlike the other benches, this one FAILS (exit 1) when a
 * budget is exceeded: the budgets are the issue's deliverable, and the bench is what guards them.
 *
 * Set-up: a bench database (bench/bench-database.ts), Signet as `npm start` runs it
 * (bench/signet-service.ts), a template from a real PDF (../shared/fixtures/pdf/
 * docuseal-sample-document.pdf) with a text, a date and a signature field, and one submission.
 *
 * Measured, in Debian's Chromium (playwright-core; BENCH_CHROMIUM overrides the path) on loopback,
 * BENCH_FORM_RUNS runs (default 7, at least 7) per viewport (1280×800 and 390×844 with touch),
 * each in a new browser context (empty cache), after one warm-up run (the service bundles the page
 * on its first request):
 *
 * 1. **Bytes of every response**, grouped by kind: the HTML shell, the form's own JS and CSS,
 *    fonts; and apart from the first load: the API (GraphQL), pdf.js, its worker and its data
 *    (CMaps, standard fonts, WASM, ICC), the PDF itself. Per kind: the body as served (raw), on
 *    the wire (CDP `Network.loadingFinished` encodedDataLength: headers + body as sent, so with
 *    whatever Content-Encoding the service used), and what gzip -9 and brotli (quality 11) would
 *    make of the body (node:zlib) — what a compressing proxy would send. Requests made inside
 *    pdf.js' worker are not seen by the page's CDP session; they are counted from Playwright's
 *    request events (body + headers sizes, which Playwright takes from the same CDP events).
 * 2. **Time to the first typeable field**: from navigation start (performance.timeOrigin) to the
 *    first moment an input, textarea, select or button inside a `.field` is visible (rendered, with
 *    a box inside the viewport) and not disabled — recorded in the page by a script added before
 *    the page's own (MutationObserver plus an animation-frame check). For information also: the
 *    shell's responseEnd, DOMContentLoaded, load, and the first PDF page drawn
 *    (`.page[data-rendered="true"]`).
 *
 * Budgets (BUDGETS below; why in bench/README.md): exceeding one prints OVER and exits 1. The last
 * line is `BENCH_RESULT {json}`. Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_FORM_RUNS,
 * BENCH_CHROMIUM.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Browser, BrowserContextOptions } from 'playwright-core';
import { cleanUpOnSignals, onCleanup, runBench, runCleanups } from './cleanup.ts';
import { REPO_ROOT } from './processes.ts';
import { startSignetService } from './signet-service.ts';
import { envNumber, fmt, median, print, round } from './util.ts';

const RUNS = Math.max(7, Math.round(envNumber('BENCH_FORM_RUNS', 7)));
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'docuseal-sample-document.pdf');
const KB = 1024;

/**
 * The budgets. Bytes are gzip -9 of the body (what any compressing server or proxy sends; the
 * service itself does not compress, see the README), so they do not depend on a deployment's proxy.
 */
export const BUDGETS = {
  /** The form's own script (form.js and any chunk of it), excluding pdf.js: issue 24 §6's example. */
  formJsGzipBytes: 150 * KB,
  /** The form's styles. */
  cssGzipBytes: 20 * KB,
  /** The HTML shell, with the texts of the signer's language and English. */
  shellGzipBytes: 30 * KB,
  /** Shell + form JS + CSS + fonts: everything before the first field, without pdf.js and the PDF. */
  firstLoadGzipBytes: 200 * KB,
  /** Median time from navigation start to the first typeable field, on loopback (either viewport). */
  firstTypeableMs: 1000,
} as const;

/** What a response is, by its URL. */
export type Kind =
  | 'html shell'
  | 'form js'
  | 'form css'
  | 'fonts'
  | 'api (graphql)'
  | 'pdf.js'
  | 'pdf.js worker'
  | 'pdf.js data'
  | 'pdf (document)'
  | 'other';

/** Kinds that make up the form's first load (the budgets' subject); the rest is listed apart. */
export const FIRST_LOAD_KINDS: readonly Kind[] = ['html shell', 'form js', 'form css', 'fonts'];

/**
 * The kind of a response of the signing page, by path (src/signing-form/page-routes.ts's routes).
 * @param url absolute URL of the request
 * @param slug the form's slug (the shell is `/s/<slug>`)
 */
export function kindOf(url: string, slug: string): Kind {
  const { pathname } = new URL(url);
  if (pathname === `/s/${slug}`) return 'html shell';
  if (/^\/s-assets\/pdfjs-[^/]+\/build\/pdf\.worker/.test(pathname)) return 'pdf.js worker';
  if (/^\/s-assets\/pdfjs-[^/]+\/build\//.test(pathname)) return 'pdf.js';
  if (/^\/s-assets\/pdfjs-/.test(pathname)) return 'pdf.js data';
  if (pathname.startsWith('/s-assets/fonts/')) return 'fonts';
  if (/^\/s-assets\/.*\.m?js$/.test(pathname)) return 'form js';
  if (/^\/s-assets\/.*\.css$/.test(pathname)) return 'form css';
  if (pathname === '/graphql') return 'api (graphql)';
  if (pathname.startsWith('/file/')) return 'pdf (document)';
  return 'other';
}

/** Sizes of one kind's responses, summed. */
export interface KindBytes {
  requests: number;
  /** Bodies as served (after any Content-Encoding is undone: what the browser parses). */
  raw: number;
  /** Headers + bodies as they came over the connection (CDP encodedDataLength). */
  wire: number;
  /** gzip -9 of each body. */
  gzip: number;
  /** brotli quality 11 of each body. */
  brotli: number;
  /** Content-Encoding values seen ('' for none). */
  encodings: Set<string>;
  /** Responses whose wire size is Playwright's (not seen by the page's CDP session). */
  fromPlaywright: number;
}

export interface BudgetCheck {
  name: keyof typeof BUDGETS;
  value: number;
  limit: number;
  over: boolean;
}

/**
 * Judges the measured figures against BUDGETS.
 * @param bytes per kind (gzip sizes are judged)
 * @param firstTypeableMs median time to the first typeable field of each viewport, in ms
 * @returns one check per budget; `over` when value > limit
 */
export function checkBudgets(bytes: ReadonlyMap<Kind, KindBytes>, firstTypeableMs: readonly number[]): BudgetCheck[] {
  const gz = (kind: Kind) => bytes.get(kind)?.gzip ?? 0;
  const values: Record<keyof typeof BUDGETS, number> = {
    formJsGzipBytes: gz('form js'),
    cssGzipBytes: gz('form css'),
    shellGzipBytes: gz('html shell'),
    firstLoadGzipBytes: FIRST_LOAD_KINDS.reduce((sum, kind) => sum + gz(kind), 0),
    firstTypeableMs: Math.max(...firstTypeableMs),
  };
  return (Object.keys(BUDGETS) as (keyof typeof BUDGETS)[]).map((name) => ({
    name,
    value: values[name],
    limit: BUDGETS[name],
    over: !(values[name] <= BUDGETS[name]),
  }));
}

/** Times in ms from navigation start, as the page recorded them. */
interface RunTimes {
  firstTypeable: number;
  responseEnd: number;
  domContentLoaded: number;
  load: number;
  firstPageDrawn: number | null;
}

interface Response {
  url: string;
  kind: Kind;
  body: Buffer;
  wire: number;
  encoding: string;
  /**
   * Where `wire` came from: the page's CDP session, or Playwright's request sizes (requests made by
   * pdf.js' worker, and the worker's own script, whose body the page's events count as 0 bytes: an
   * uncompressed body's size is then taken as its wire size).
   */
  source: 'cdp' | 'playwright';
}

/**
 * A field's controls on the page: over the document (src/signing-form/page/fields.ts puts each
 * field in a `.field`) and, on a narrow screen where the guided panel opens by itself, the current
 * field's input in the panel (src/signing-form/page/guide.ts `.guide-body`; the boxes over the
 * document are then display-only). If the page's markup changes, change this: the bench then
 * fails with a message naming it rather than measuring something else.
 */
export const FIELD_CONTROLS = [
  '.field input',
  '.field textarea',
  '.field select',
  '.field button',
  '.guide-body input',
  '.guide-body textarea',
  '.guide-body select',
  '.guide-body button',
].join(', ');

/** Added before the page's own scripts: when the first field could be typed in, and the first page drawn. */
const MARKS_SCRIPT = `(() => {
  const marks = (window.__signetMarks = { firstTypeable: null, firstPageDrawn: null });
  const controls = ${JSON.stringify(FIELD_CONTROLS)};
  const typeable = (element) => {
    if (element.disabled || !element.checkVisibility({ visibilityProperty: true, opacityProperty: true })) return false;
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && box.bottom > 0 && box.top < innerHeight;
  };
  const check = () => {
    if (marks.firstTypeable === null && [...document.querySelectorAll(controls)].some(typeable))
      marks.firstTypeable = performance.now();
    if (marks.firstPageDrawn === null && document.querySelector('.page[data-rendered="true"]'))
      marks.firstPageDrawn = performance.now();
    const done = marks.firstTypeable !== null && marks.firstPageDrawn !== null;
    if (done) observer.disconnect();
    return done;
  };
  const observer = new MutationObserver(check);
  observer.observe(document, { subtree: true, childList: true, attributes: true });
  const frame = () => { if (!check()) requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
})();`;

const VIEWPORTS: { name: string; options: BrowserContextOptions }[] = [
  { name: 'desktop 1280×800', options: { viewport: { width: 1280, height: 800 } } },
  {
    name: 'phone 390×844',
    options: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true },
  },
];

/** One page load in a new context: every response and the page's times. */
async function loadOnce(
  browser: Browser,
  url: string,
  slug: string,
  options: BrowserContextOptions,
): Promise<{ responses: Response[]; times: RunTimes }> {
  const context = await browser.newContext(options);
  try {
    await context.addInitScript({ content: MARKS_SCRIPT });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    const cdpWire = new Map<string, number>();
    const cdpUrls = new Map<string, string>();
    cdp.on('Network.requestWillBeSent', (event) => cdpUrls.set(event.requestId, event.request.url));
    cdp.on('Network.loadingFinished', (event) => {
      const requestUrl = cdpUrls.get(event.requestId);
      if (requestUrl) cdpWire.set(requestUrl, (cdpWire.get(requestUrl) ?? 0) + event.encodedDataLength);
    });
    await cdp.send('Network.enable');

    const finished: Promise<Response | null>[] = [];
    const failures: string[] = [];
    context.on('requestfailed', (request) => failures.push(`${request.url()}: ${request.failure()?.errorText}`));
    context.on('requestfinished', (request) => {
      finished.push(
        (async () => {
          const requestUrl = request.url();
          if (requestUrl.startsWith('data:') || requestUrl.startsWith('blob:')) return null;
          const response = await request.response();
          if (!response) return null;
          const body = await response.body().catch(() => Buffer.alloc(0));
          const sizes = await request.sizes();
          const encoding = (await response.allHeaders())['content-encoding'] ?? '';
          // pdf.js' worker script: its body arrives in the worker's target, so the page's events say 0.
          const bodyWire = sizes.responseBodySize || (encoding === '' ? body.length : 0);
          return {
            url: requestUrl,
            kind: kindOf(requestUrl, slug),
            body,
            wire: bodyWire + sizes.responseHeadersSize,
            encoding,
            source: 'playwright',
          } satisfies Response;
        })(),
      );
    });

    await page.goto(url, { waitUntil: 'commit' });
    await page
      .waitForFunction(
        () => {
          const marks = (window as unknown as { __signetMarks?: { firstTypeable: number | null } }).__signetMarks;
          return marks?.firstTypeable != null;
        },
        null,
        { timeout: 30_000, polling: 50 },
      )
      .catch((error: unknown) => {
        throw new Error(
          `no visible, enabled field control (FIELD_CONTROLS: ${FIELD_CONTROLS}) within 30 s: ` +
            `has the page's markup changed? ${(error as Error).message}`,
        );
      });
    // The rest of the first screen: the first PDF page drawn, then no request for 500 ms.
    await page.locator('.page[data-rendered="true"]').first().waitFor({ timeout: 30_000 });
    await page.waitForLoadState('networkidle');
    const times = await page.evaluate(() => {
      const marks = (window as unknown as { __signetMarks: { firstTypeable: number; firstPageDrawn: number | null } })
        .__signetMarks;
      const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
      return {
        firstTypeable: marks.firstTypeable,
        firstPageDrawn: marks.firstPageDrawn,
        responseEnd: navigation.responseEnd,
        domContentLoaded: navigation.domContentLoadedEventEnd,
        load: navigation.loadEventEnd,
      };
    });
    const responses = (await Promise.all(finished)).filter((r): r is Response => r !== null);
    if (failures.length > 0) throw new Error(`requests failed:\n${failures.join('\n')}`);
    for (const response of responses) {
      const wire = cdpWire.get(response.url);
      if (wire !== undefined) {
        response.wire = wire;
        response.source = 'cdp';
        cdpWire.delete(response.url);
      }
    }
    return { responses, times };
  } finally {
    await context.close();
  }
}

/** Sums responses per kind, gzip -9 and brotli 11 of each body. */
export function bytesByKind(
  responses: readonly Pick<Response, 'kind' | 'body' | 'wire' | 'encoding' | 'source'>[],
): Map<Kind, KindBytes> {
  const byKind = new Map<Kind, KindBytes>();
  for (const response of responses) {
    const entry = byKind.get(response.kind) ?? {
      requests: 0,
      raw: 0,
      wire: 0,
      gzip: 0,
      brotli: 0,
      encodings: new Set<string>(),
      fromPlaywright: 0,
    };
    entry.requests += 1;
    entry.raw += response.body.length;
    entry.wire += response.wire;
    entry.gzip += zlib.gzipSync(response.body, { level: 9 }).length;
    entry.brotli += zlib.brotliCompressSync(response.body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: response.body.length,
      },
    }).length;
    entry.encodings.add(response.encoding);
    if (response.source === 'playwright') entry.fromPlaywright += 1;
    byKind.set(response.kind, entry);
  }
  return byKind;
}

const kb = (bytes: number) => fmt(bytes / KB, 1);

function printBytes(title: string, byKind: Map<Kind, KindBytes>, kinds: readonly Kind[]): void {
  print(`\n${title}`);
  print(
    `  ${'kind'.padEnd(16)} ${'req'.padStart(3)} ${'raw KB'.padStart(9)} ${'wire KB'.padStart(9)} ` +
      `${'gzip-9 KB'.padStart(10)} ${'brotli KB'.padStart(10)} ${'raw/gz'.padStart(7)}  served encoding`,
  );
  const total = { requests: 0, raw: 0, wire: 0, gzip: 0, brotli: 0 };
  for (const kind of kinds) {
    const b = byKind.get(kind);
    if (!b) continue;
    for (const key of ['requests', 'raw', 'wire', 'gzip', 'brotli'] as const) total[key] += b[key];
    print(
      `  ${kind.padEnd(16)} ${String(b.requests).padStart(3)} ${kb(b.raw).padStart(9)} ${kb(b.wire).padStart(9)} ` +
        `${kb(b.gzip).padStart(10)} ${kb(b.brotli).padStart(10)} ${fmt(b.raw / Math.max(1, b.gzip), 2).padStart(7)}  ` +
        `${[...b.encodings].map((e) => e || 'identity').join(', ')}${b.fromPlaywright ? ' (wire: worker, *)' : ''}`,
    );
  }
  print(
    `  ${'total'.padEnd(16)} ${String(total.requests).padStart(3)} ${kb(total.raw).padStart(9)} ` +
      `${kb(total.wire).padStart(9)} ${kb(total.gzip).padStart(10)} ${kb(total.brotli).padStart(10)}`,
  );
}

async function main(): Promise<number> {
  const started = performance.now();
  print(
    `Signet signing form weight — node ${process.version}, ${os.cpus().length} CPUs, ` +
      `load average ${os
        .loadavg()
        .map((l) => fmt(l, 2))
        .join(' ')}`,
  );
  print('\n[setup] bench database, Signet (dist/main.mjs), template, submission, Chromium …');
  const { createBenchDatabase } = await import('./bench-database.ts');
  const database = await createBenchDatabase(onCleanup);
  const signet = await startSignetService({ databaseUrl: database.url, apiKey: database.apiKey });
  const pdf = await fs.readFile(FIXTURE);
  const template = await signet.api('POST', '/templates/pdf', {
    name: 'Weight bench',
    documents: [{ name: 'Sample', file: pdf.toString('base64') }],
    fields: [
      { name: 'Full Name', role: 'Signer', type: 'text', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
      { name: 'Date', role: 'Signer', type: 'date', areas: [{ x: 320, y: 120, w: 140, h: 24, page: 1 }] },
      { name: 'Signature', role: 'Signer', type: 'signature', areas: [{ x: 60, y: 170, w: 200, h: 60, page: 1 }] },
    ],
  });
  const [submitter] = (await signet.api('POST', '/submissions', {
    template_id: template.id,
    send_email: false,
    submitters: [{ role: 'Signer', email: 'signer@bench.test' }],
  })) as { slug: string }[];
  const slug = submitter!.slug;
  const formUrl = `${signet.url}/s/${slug}`;

  const executablePath = process.env.BENCH_CHROMIUM ?? '/usr/bin/chromium';
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath, headless: true });
  onCleanup('close Chromium', () => browser.close());
  print(`  Signet ${signet.url}, form ${formUrl}, Chromium ${browser.version()}`);

  // Warm-up: the service bundles the page on its first request.
  await loadOnce(browser, formUrl, slug, VIEWPORTS[0]!.options);

  const timesByViewport = new Map<string, RunTimes[]>();
  let firstResponses: Response[] | undefined;
  for (const viewport of VIEWPORTS) timesByViewport.set(viewport.name, []);
  for (let run = 0; run < RUNS; run += 1) {
    // Alternating which viewport goes first.
    const order = run % 2 === 0 ? VIEWPORTS : [...VIEWPORTS].reverse();
    for (const viewport of order) {
      const { responses, times } = await loadOnce(browser, formUrl, slug, viewport.options);
      if (viewport === VIEWPORTS[0] && !firstResponses) firstResponses = responses;
      timesByViewport.get(viewport.name)!.push(times);
    }
  }

  const byKind = bytesByKind(firstResponses!);
  const others = [...byKind.keys()].filter((kind) => !FIRST_LOAD_KINDS.includes(kind));
  printBytes('First load of the form (desktop; budgets apply to these):', byKind, FIRST_LOAD_KINDS);
  printBytes('Also loaded for the first screen, not in the budget (the PDF, pdf.js, the API):', byKind, others);
  const served = new Set([...byKind.values()].flatMap((b) => [...b.encodings]));
  print(
    `  The service sent ${[...served].map((e) => e || 'identity').join(', ')} bodies` +
      ' (wire = raw + headers when uncompressed).',
  );
  print("  * requests of pdf.js' worker: not in the page's CDP events; wire = Playwright's sizes.");
  const formJs = byKind.get('form js');
  const pdfJs = (byKind.get('pdf.js')?.gzip ?? 0) + (byKind.get('pdf.js worker')?.gzip ?? 0);
  if (formJs) print(`  Ratios: pdf.js + worker / form js (gzip) ${fmt(pdfJs / formJs.gzip, 2)}`);

  // The shell in a right-to-left language carries two languages' texts (Arabic and English).
  const arabicShell = Buffer.from(await (await fetch(`${formUrl}?lang=ar`)).arrayBuffer());
  print(
    `  The shell in Arabic (?lang=ar): raw ${kb(arabicShell.length)} KB, ` +
      `gzip-9 ${kb(zlib.gzipSync(arabicShell, { level: 9 }).length)} KB`,
  );

  print(`\nTime from navigation start, ms (median of ${RUNS} runs, new context each; min–max in brackets):`);
  print(
    `  ${'viewport'.padEnd(18)} ${'shell end'.padStart(10)} ${'DOMContentLd'.padStart(13)} ` +
      `${'load'.padStart(8)} ${'1st typeable'.padStart(20)} ${'1st page drawn'.padStart(15)}`,
  );
  const typeableMedians: number[] = [];
  const timesJson: Record<string, Record<string, number | null>> = {};
  for (const [name, runs] of timesByViewport) {
    const m = (pick: (t: RunTimes) => number) => median(runs.map(pick));
    const typeable = runs.map((t) => t.firstTypeable);
    const drawn = runs.map((t) => t.firstPageDrawn).filter((v): v is number => v !== null);
    typeableMedians.push(median(typeable));
    const spread = `${fmt(median(typeable), 0)} (${fmt(Math.min(...typeable), 0)}–${fmt(Math.max(...typeable), 0)})`;
    timesJson[name] = {
      responseEnd: round(
        m((t) => t.responseEnd),
        1,
      ),
      domContentLoaded: round(
        m((t) => t.domContentLoaded),
        1,
      ),
      load: round(
        m((t) => t.load),
        1,
      ),
      firstTypeable: round(median(typeable), 1),
      firstPageDrawn: drawn.length ? round(median(drawn), 1) : null,
    };
    print(
      `  ${name.padEnd(18)} ${fmt(
        m((t) => t.responseEnd),
        0,
      ).padStart(10)} ` +
        `${fmt(
          m((t) => t.domContentLoaded),
          0,
        ).padStart(13)} ${fmt(
          m((t) => t.load),
          0,
        ).padStart(8)} ` +
        `${spread.padStart(20)} ` +
        `${(drawn.length ? fmt(median(drawn), 0) : '—').padStart(15)}`,
    );
  }

  const checks = checkBudgets(byKind, typeableMedians);
  print('\nBudgets (bytes: gzip -9; time: the slower viewport’s median):');
  for (const check of checks) {
    const unit = check.name.endsWith('Ms') ? 'ms' : 'KB';
    const show = (v: number) => (unit === 'ms' ? fmt(v, 0) : kb(v));
    print(
      `  ${check.name.padEnd(20)} ${show(check.value).padStart(8)} ${unit} ≤ ${show(check.limit).padStart(6)} ${unit}` +
        `  ${check.over ? 'OVER' : 'ok'}`,
    );
  }
  print(`\n(${fmt((performance.now() - started) / 1000, 1)} s)`);
  print(
    `BENCH_RESULT ${JSON.stringify({
      bytes: Object.fromEntries(
        [...byKind].map(([kind, b]) => [
          kind,
          { requests: b.requests, raw: b.raw, wire: b.wire, gzip: b.gzip, brotli: b.brotli },
        ]),
      ),
      times: timesJson,
      budgets: checks,
    })}`,
  );
  await runCleanups();
  return checks.some((check) => check.over) ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  cleanUpOnSignals();
  runBench(main);
}
