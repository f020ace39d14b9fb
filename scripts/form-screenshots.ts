/**
 * `npm run screenshots:form`: PNGs of every state of the signer's page (issue 24 §5) into
 * docs/signing-form/, shown by docs/signing-form.md "How it looks". Overwrites them; names are
 * fixed: `<state>.png` at 1280×800 and `<state>-phone.png` at 390×844 (touch; device scale 1 to keep
 * the committed files small), the viewport only (what the signer sees first).
 *
 * It starts Signet as `npm start` runs it on a fresh database (bench/bench-database.ts: a
 * `signet_bench_<random>` database on DATABASE_URL's server, else an embedded PostgreSQL; dropped
 * at the end, bench/cleanup.ts) and drives Debian's Chromium through playwright-core
 * (SCREENSHOTS_CHROMIUM overrides /usr/bin/chromium), as the tests and benches do.
 *
 * Adding a state: append to STATES a `setup` (creates what it needs through the API or SQL, once per
 * viewport, and returns the URL to open) and a `reach` (from the loaded page to the state). A
 * `reach` that cannot find its UI element calls `need()`, which throws MissingUi: the state is
 * skipped with a message. Any other failure is reported and makes the exit code 1, after the other states ran.
 * `SCREENSHOTS_ONLY=open,declined` renders only those states. The PNGs are recompressed with
 * optipng when it is installed (Debian's `optipng`), as they are committed.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import fs from 'node:fs/promises';
import path from 'node:path';
import { wavePng } from '../test/helpers/images.ts';
import pg from 'pg';
import type { Browser, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { cleanUpOnSignals, onCleanup, runBench, runCleanups } from '../bench/cleanup.ts';
import { freePort, REPO_ROOT } from '../bench/processes.ts';
import { type SignetService, startSignetService } from '../bench/signet-service.ts';

const OUT_DIR = path.join(REPO_ROOT, 'docs', 'signing-form');
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'docuseal-sample-document.pdf');

export type ViewportName = 'desktop' | 'phone';
export const VIEWPORTS: Record<ViewportName, BrowserContextOptions> = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1 },
};

/** What a state's functions get. */
export interface Setting {
  signet: SignetService;
  sql: pg.Pool;
  /** The origin of a page that embeds the form (another origin than Signet's). */
  embedOrigin: string;
  viewport: ViewportName;
  /** A new submission of the sample template for one signer: its slug and `/s/{slug}` URL. */
  newForm(options?: { values?: Record<string, unknown>; expireAt?: string }): Promise<{ slug: string; url: string }>;
  /** The sample template as the API shows it (`slug`, `id`). */
  template: { id: number; slug: string };
}

export interface State {
  /** The file name without `.png` (`-phone` is added for the phone). */
  name: string;
  /** One line for docs/signing-form.md. */
  title: string;
  /** Default: both. */
  viewports?: ViewportName[];
  /** Creates what the state needs; returns the URL to open. */
  setup(setting: Setting): Promise<string>;
  /** From the loaded page to the state; `need()` a UI element the page may not have yet. */
  reach?(page: Page, setting: Setting): Promise<void>;
}

/** The state's UI element is not on the page (yet): skip, do not fail. */
export class MissingUi extends Error {}

/**
 * Waits for `locator` to be visible; throws MissingUi naming `what` when it is not within `timeoutMs`.
 * @returns the locator's first match
 */
export async function need(locator: Locator, what: string, timeoutMs = 5000): Promise<Locator> {
  const first = locator.first();
  try {
    await first.waitFor({ state: 'visible', timeout: timeoutMs });
  } catch {
    throw new MissingUi(`no ${what} on the page`);
  }
  return first;
}

/** A signature as the signing form stores one: a small PNG data URL, a dark wave on transparency. */
function signaturePng(): string {
  const png = wavePng({
    width: 300,
    height: 100,
    curve: (x) => 50 + Math.sin(x / 17) * 28 + Math.sin(x / 5) * 6,
    thickness: 2,
    margin: 20,
    rgba: 0x101040ff,
  });
  return `data:image/png;base64,${png.toString('base64')}`;
}

/** The sample template's fields (its guided panel's steps). */
const FIELD_COUNT = 6;

/** Every field of the sample template filled: Complete succeeds at once. */
const FILLED = {
  'Full Name': 'Ada Lovelace',
  Company: 'Analytical Engines Ltd',
  Date: '2026-11-28',
  Agree: true,
  Plan: 'Standard',
};

const signatureButton = (page: Page) =>
  page.locator('.signature-button').or(page.getByRole('button', { name: /sign here|signature/i }));
const dialog = (page: Page) => page.locator('dialog[open]').or(page.getByRole('dialog'));
/** The agreement to sign electronically (src/signing-form/page/consent.ts): before the first signature and Complete. */
const consentDialog = (page: Page) => page.getByRole('dialog', { name: 'Agreement to sign electronically' });
/** The guided panel (src/signing-form/page/guide.ts): open by itself below 768 px, by Start above. */
const guide = (page: Page) => page.locator('section.guide');

/** "I agree" in the consent dialog; waits until it has closed and the page goes on. */
async function agree(page: Page): Promise<void> {
  await consentDialog(page).getByRole('button', { name: 'I agree' }).click();
  await consentDialog(page).waitFor({ state: 'hidden' });
}

/** The states, in the order docs/signing-form.md shows them. */
export const STATES: State[] = [
  {
    name: 'open',
    title: 'The form as a signer opens it',
    setup: async (s) => (await s.newForm()).url,
  },
  {
    name: 'guided',
    title: 'The guided field-by-field panel (issue 24 §1): by itself on a phone, by Start on a desktop',
    setup: async (s) => (await s.newForm()).url,
    async reach(page, s) {
      if (s.viewport === 'desktop')
        await (await need(page.getByRole('button', { name: 'Start' }), 'Start button')).click();
      await need(guide(page), 'guided panel');
      await guide(page).getByRole('textbox', { name: 'Full Name' }).fill('Ada Lovelace');
    },
  },
  {
    name: 'consent',
    title:
      'The electronic-signature disclosure, before the first signature (issue 24 §4): ' +
      'the signature box on a desktop, Done on the panel’s signature step on a phone',
    // On a phone the other fields are filled already: Next through them to the signature step.
    setup: async (s) => (await s.newForm(s.viewport === 'phone' ? { values: FILLED } : {})).url,
    async reach(page, s) {
      if (s.viewport === 'desktop') await (await need(signatureButton(page), 'signature field')).click();
      else {
        await need(guide(page), 'guided panel');
        for (let step = 1; step < FIELD_COUNT; step += 1) {
          await guide(page).getByRole('button', { name: 'Next' }).click();
          await guide(page)
            .locator('.guide-count', { hasText: `${step + 1} of ${FIELD_COUNT}` })
            .waitFor();
        }
        await (await need(guide(page).getByRole('tab', { name: 'Type' }), 'the panel’s signature pad')).click();
        await guide(page).getByRole('button', { name: 'Done' }).click();
      }
      await need(consentDialog(page), 'consent dialog');
    },
  },
  {
    name: 'signature-dialog',
    title: 'Signing: the signature dialog',
    // Below 768 px the guided panel holds the fields and cannot be closed: a phone signs on its pad.
    viewports: ['desktop'],
    setup: async (s) => (await s.newForm()).url,
    async reach(page) {
      await (await need(signatureButton(page), 'signature field')).click();
      // The agreement to sign electronically first (issue 24 §4).
      await agree(page);
      await need(page.locator('.signature-dialog[open], dialog[open] canvas'), 'signature dialog');
    },
  },
  {
    name: 'decline-dialog',
    title: 'Declining: the reason is asked',
    setup: async (s) => (await s.newForm()).url,
    async reach(page) {
      await (await need(page.getByRole('button', { name: /^decline$/i }), 'Decline button')).click();
      await need(dialog(page), 'decline dialog');
    },
  },
  {
    name: 'validation-errors',
    title: 'Complete pressed with required fields empty',
    setup: async (s) => (await s.newForm()).url,
    async reach(page) {
      await (await need(page.getByRole('button', { name: /^complete$/i }), 'Complete button')).click();
      await need(page.locator('.alert:not([hidden]), [role="alert"]:not(:empty)'), 'error summary');
    },
  },
  {
    name: 'completed',
    title: 'Just completed',
    setup: async (s) => (await s.newForm({ values: { ...FILLED, Signature: signaturePng() } })).url,
    async reach(page) {
      await (await need(page.getByRole('button', { name: /^complete$/i }), 'Complete button')).click();
      // Completing is signing: the agreement first (issue 24 §4).
      await agree(page);
      // Not need(): the page has a completed card, so its absence is a failure, not a skip.
      await page
        .getByRole('heading', { name: /thank you|completed/i })
        .first()
        .waitFor({ timeout: 30_000 });
      // The signed copies' links once the completion job has made them (else the "being prepared" text).
      await page
        .locator('.download-link, a[download]')
        .first()
        .waitFor({ timeout: 30_000 })
        .catch(() => undefined);
    },
  },
  {
    name: 'declined',
    title: 'Declined (opened again later)',
    async setup(s) {
      const form = await s.newForm();
      await graphql(
        s.signet,
        'mutation ($slug: String!) { declineSigningForm(slug: $slug, reason: "Wrong address") { state } }',
        {
          slug: form.slug,
        },
      );
      return form.url;
    },
  },
  {
    name: 'expired',
    title: 'Expired',
    async setup(s) {
      const form = await s.newForm({ expireAt: new Date(Date.now() + 3_600_000).toISOString() });
      // Past its expiry: set in SQL (the API refuses an expire_at in the past).
      await s.sql.query(
        `UPDATE submissions SET expire_at = now() - interval '1 day'
          WHERE id = (SELECT submission_id FROM submitters WHERE slug = $1)`,
        [form.slug],
      );
      return form.url;
    },
  },
  {
    name: 'template-link',
    title: "A shared template's link (/d/{slug}): the signer's email first",
    setup: async (s) => `${s.signet.url}/d/${s.template.slug}`,
  },
  {
    name: 'not-found',
    title: 'An unknown link',
    setup: async (s) => `${s.signet.url}/s/no-such-form`,
  },
  {
    name: 'embedded',
    title: 'Embedded in another site with <signet-form>',
    async setup(s) {
      const form = await s.newForm();
      return `${s.embedOrigin}/embed?src=${encodeURIComponent(form.url)}`;
    },
    async reach(page) {
      const frame = page.frameLocator('iframe').first();
      await need(frame.locator('.page[data-rendered="true"]'), 'form inside the embedding frame', 30_000);
    },
  },
  {
    name: 'arabic',
    title: 'Right to left: Arabic (?lang=ar)',
    setup: async (s) => `${(await s.newForm()).url}?lang=ar`,
  },
];

async function graphql(signet: SignetService, query: string, variables: Record<string, unknown>): Promise<unknown> {
  const response = await fetch(`${signet.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: unknown; errors?: unknown };
  if (body.errors) throw new Error(`GraphQL: ${JSON.stringify(body.errors).slice(0, 500)}`);
  return body.data;
}

/** Waits until the page shows what it loads: no loading text, no request for 500 ms, PDF pages drawn. */
async function settle(page: Page): Promise<void> {
  await page.waitForLoadState('networkidle');
  await page.waitForFunction(() => !document.querySelector('#signing-form > .loading'), null, { timeout: 30_000 });
  const pages = page.locator('.page');
  if ((await pages.count()) > 0)
    await page
      .locator('.page[data-rendered="true"]')
      .first()
      .waitFor({ timeout: 30_000 })
      .catch(() => undefined);
  await page.evaluate(() => document.fonts.ready.then(() => undefined));
}

/** A page on another origin embedding the form with `<signet-form>` (docs/embedding.md). */
async function startEmbeddingSite(signetUrl: string): Promise<string> {
  const port = await freePort();
  const server = createServer((request, response) => {
    const src = new URL(request.url ?? '/', 'http://x').searchParams.get('src') ?? '';
    const escaped = src.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Example Ltd: sign your contract</title>
<style>body{font-family:system-ui,sans-serif;margin:0;background:#eef2f6}
header{background:#123;color:#fff;padding:12px 24px}main{padding:16px}</style>
<script src="${signetUrl}/js/form.js"></script></head>
<body><header><strong>Example Ltd</strong> · Your contract</header>
<main><signet-form data-src="${escaped}"></signet-form></main></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(port, 'localhost', resolve));
  onCleanup('stop the embedding site', () => new Promise((resolve) => server.close(() => resolve())));
  // localhost, not 127.0.0.1: another origin than Signet's.
  return `http://localhost:${port}`;
}

export interface Outcome {
  file: string;
  result: 'written' | 'skipped' | 'failed';
  message?: string;
}

/** Renders one state in one viewport into OUT_DIR. */
async function render(browser: Browser, state: State, setting: Setting): Promise<Outcome> {
  const file = `${state.name}${setting.viewport === 'phone' ? '-phone' : ''}.png`;
  const context = await browser.newContext({ ...VIEWPORTS[setting.viewport], locale: 'en-US' });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    const url = await state.setup(setting);
    await page.goto(url);
    await settle(page);
    if (state.reach) {
      await state.reach(page, setting);
      await settle(page);
    }
    await page.screenshot({ path: path.join(OUT_DIR, file), animations: 'disabled', caret: 'hide' });
    return { file, result: 'written' };
  } catch (error) {
    if (error instanceof MissingUi) return { file, result: 'skipped', message: error.message };
    return { file, result: 'failed', message: error instanceof Error ? error.message : String(error) };
  } finally {
    await context.close();
  }
}

/**
 * Recompresses the PNGs losslessly with optipng (Debian's `optipng`: ~20 % smaller here) when it is
 * installed; otherwise says so and keeps Chromium's PNGs.
 */
function optimise(files: string[]): void {
  if (files.length === 0) return;
  try {
    execFileSync('optipng', ['-quiet', '-o2', '-strip', 'all', ...files], { stdio: 'inherit' });
    process.stdout.write(`optipng: ${files.length} PNGs recompressed\n`);
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    process.stdout.write(
      missing
        ? 'optipng is not installed (apt-get install optipng): PNGs left as Chromium wrote them\n'
        : 'optipng failed\n',
    );
  }
}

async function main(): Promise<number> {
  const only = process.env.SCREENSHOTS_ONLY?.split(',').map((s) => s.trim());
  const states = only ? STATES.filter((s) => only.includes(s.name)) : STATES;
  const { createBenchDatabase } = await import('../bench/bench-database.ts');
  const database = await createBenchDatabase(onCleanup);
  const signet = await startSignetService({ databaseUrl: database.url, apiKey: database.apiKey });
  const sql = new pg.Pool({ connectionString: database.url, max: 2 });
  onCleanup('close the SQL pool', () => sql.end());
  // The sender the page names ("From …"): a company, not the bench account's name.
  await sql.query(`UPDATE accounts SET name = 'Acme Ltd'`);
  const embedOrigin = await startEmbeddingSite(signet.url);

  const pdf = await fs.readFile(FIXTURE);
  const area = (x: number, y: number, w: number, h: number) => [{ x, y, w, h, page: 1 }];
  const template = await signet.api('POST', '/templates/pdf', {
    name: 'Service agreement',
    documents: [{ name: 'Service agreement', file: pdf.toString('base64') }],
    fields: [
      { name: 'Full Name', role: 'Signer', type: 'text', required: true, areas: area(60, 120, 240, 24) },
      { name: 'Company', role: 'Signer', type: 'text', required: false, areas: area(320, 120, 220, 24) },
      { name: 'Date', role: 'Signer', type: 'date', areas: area(60, 160, 140, 24) },
      {
        name: 'Plan',
        role: 'Signer',
        type: 'select',
        options: ['Standard', 'Premium'],
        areas: area(220, 160, 140, 24),
      },
      { name: 'Agree', role: 'Signer', type: 'checkbox', required: false, areas: area(380, 160, 20, 20) },
      { name: 'Signature', role: 'Signer', type: 'signature', required: true, areas: area(60, 200, 200, 60) },
    ],
  });
  let count = 0;
  const newForm: Setting['newForm'] = async (options = {}) => {
    count += 1;
    const [submitter] = (await signet.api('POST', '/submissions', {
      template_id: template.id,
      send_email: false,
      ...(options.expireAt ? { expire_at: options.expireAt } : {}),
      submitters: [
        { role: 'Signer', email: `signer${count}@example.test`, name: 'Ada Lovelace', values: options.values },
      ],
    })) as { slug: string }[];
    return { slug: submitter!.slug, url: `${signet.url}/s/${submitter!.slug}` };
  };

  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.SCREENSHOTS_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
  });
  onCleanup('close Chromium', () => browser.close());
  await fs.mkdir(OUT_DIR, { recursive: true });

  const outcomes: Outcome[] = [];
  for (const state of states) {
    for (const viewport of state.viewports ?? (['desktop', 'phone'] as const)) {
      const setting: Setting = { signet, sql, embedOrigin, viewport, newForm, template };
      const outcome = await render(browser, state, setting);
      outcomes.push(outcome);
      process.stdout.write(
        `${outcome.result.padEnd(8)} ${outcome.file}${outcome.message ? `: ${outcome.message.split('\n')[0]}` : ''}\n`,
      );
    }
  }
  await runCleanups();
  optimise(outcomes.filter((o) => o.result === 'written').map((o) => path.join(OUT_DIR, o.file)));
  const failed = outcomes.filter((o) => o.result === 'failed').length;
  process.stdout.write(
    `\n${outcomes.filter((o) => o.result === 'written').length} written to ${path.relative(REPO_ROOT, OUT_DIR)}/, ` +
      `${outcomes.filter((o) => o.result === 'skipped').length} skipped, ${failed} failed\n`,
  );
  return failed > 0 ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  cleanUpOnSignals();
  runBench(main);
}
