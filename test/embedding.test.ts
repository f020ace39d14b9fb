/**
 * The embedded signing form in Debian's Chromium (playwright-core), on a partner's page served from
 * a second loopback origin (`http://localhost:<port>`; Signet is at `http://127.0.0.1:<port>`),
 * with EMBED_ORIGINS naming that origin (docs/embedding.md):
 * - the partner's page includes `/js/form.js` from Signet and a `<signet-form>` (or
 *   `<docuseal-form>`) with DocuSeal's attributes; the signer fills and completes (or declines) in
 *   the frame, and the partner's page receives `init`, `load`, `completed`, `declined` as
 *   CustomEvents on the element, whose `detail` is the submitter in the form.* webhooks' shape (the
 *   keys the real webhook delivers), and as `postMessage`s from Signet's origin;
 * - a signer's link (`/s/`) with data-values, data-readonly-fields (prefilled and locked by the
 *   page) and data-go-to-last; `<docuseal-form>` with data-with-decline, data-with-title and
 *   data-logo; a template link (`/d/`) with data-email, data-external-id, data-values,
 *   data-readonly-fields and data-send-copy-email="false" (stored by the server: the submission
 *   is `link`, the field read-only, no request and no copy email); a template link without
 *   data-email (the page asks for it) and with data-completed-redirect-url (the partner's whole
 *   page goes there after completing);
 * - the same page served from `http://127.0.0.1:<port>`, an origin not in EMBED_ORIGINS: Chromium
 *   refuses to show the frame (frame-ancestors) and no event arrives;
 * - every test: no request leaves loopback (the two origins), no page error.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type FrameLocator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

// A browser, a PDF renderer and the completion job share two cores with other suites.
vi.setConfig({ testTimeout: 90_000 });

let t: TestApp;
let smtp: TestSmtpServer;
let receiver: Receiver;
let alice: CreatedAccount;
let browser: Browser;
/** The partner's site: one server on 127.0.0.1, reached as two origins. */
let partner: Server;
let allowedOrigin: string;
let refusedOrigin: string;
/** The partner's pages by path, set by each test. */
const partnerPages = new Map<string, string>();

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

interface HostEvent {
  type: string;
  custom: boolean;
  detail: any;
}

/** A partner page: Signet's script, the element, and what the page records of its events and messages. */
function partnerPage(element: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Partner site</title>
<script>
  window.hostEvents = [];
  window.hostMessages = [];
  window.addEventListener('message', (e) => {
    if (e.data && e.data.source === 'signet-form') window.hostMessages.push({ origin: e.origin, type: e.data.type });
  });
</script>
<script src="${t.url}/js/form.js"></script>
</head><body><h1>Partner</h1>
${element}
<script>
  const element = document.querySelector('signet-form, docuseal-form');
  for (const type of ['init', 'load', 'completed', 'declined'])
    element.addEventListener(type, (e) =>
      window.hostEvents.push({ type, custom: e instanceof CustomEvent, detail: e.detail }));
</script>
</body></html>`;
}

/** A 1×1 PNG, inline (no request leaves loopback). */
const LOGO =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ' +
  'RU5ErkJggg==';

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/** Pages opened by a test, with what they requested and what went wrong in them. */
interface Watched {
  context: BrowserContext;
  page: Page;
  requests: string[];
  problems: string[];
  console: string[];
}
const opened: Watched[] = [];

async function openBrowserPage(): Promise<Watched> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const watched: Watched = { context, page, requests: [], problems: [], console: [] };
  page.on('request', (request) => watched.requests.push(request.url()));
  page.on('console', (message) => watched.console.push(message.text()));
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`));
  opened.push(watched);
  return watched;
}

afterEach(async () => {
  const loopback = [new URL(t.url).origin, allowedOrigin, refusedOrigin];
  for (const watched of opened.splice(0)) {
    const outside = watched.requests.filter((url) => {
      if (url.startsWith('data:') || url.startsWith('blob:')) return false;
      return !loopback.includes(new URL(url).origin);
    });
    await watched.context.close();
    expect(outside, 'requests outside loopback').toEqual([]);
    expect(watched.problems, 'page errors').toEqual([]);
  }
  partnerPages.clear();
});

/** Opens the partner's page at `path` of `origin`, with the element given. */
async function openPartnerPage(origin: string, path: string, element: string): Promise<Watched> {
  partnerPages.set(path, partnerPage(element));
  const watched = await openBrowserPage();
  await watched.page.goto(`${origin}${path}`);
  return watched;
}

const hostEvents = (page: Page) => page.evaluate(() => (window as unknown as { hostEvents: HostEvent[] }).hostEvents);
const hostMessages = (page: Page) =>
  page.evaluate(() => (window as unknown as { hostMessages: { origin: string; type: string }[] }).hostMessages);

/** Waits until the partner's page has received events of these types, in this order; returns them. */
async function waitForEvents(page: Page, types: string[]): Promise<HostEvent[]> {
  await expect
    .poll(async () => (await hostEvents(page)).map((e) => e.type), { timeout: PAGE_TIMEOUT_MS })
    .toEqual(types);
  return hostEvents(page);
}

/** The form inside the element's frame. */
const formIn = (page: Page): FrameLocator => page.frameLocator('signet-form iframe, docuseal-form iframe');

/** Types a signature in the frame's dialog. */
async function typeSignature(frame: FrameLocator, name: string): Promise<void> {
  await frame.getByRole('button', { name: 'Signature (required)' }).click();
  await acceptConsent(frame);
  await frame.getByRole('tab', { name: 'Type' }).click();
  await frame.getByLabel('Type your name').fill(name);
  await frame.getByRole('button', { name: 'Apply signature' }).click();
  await frame.locator('.type-signature button img').waitFor();
}

/** A template from the sample PDF with a name, a company and a signature for one role. */
async function createTemplate(name: string): Promise<{ id: number; slug: string }> {
  const { status, json } = await api('POST', '/templates/pdf', {
    name,
    documents: [{ name, file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [
      { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
      { name: 'Company', role: 'Signer', areas: [{ x: 60, y: 160, w: 240, h: 24, page: 1 }] },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 200, w: 200, h: 60, page: 1 }] },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return { id: json.id, slug: json.slug };
}

/** The form.* webhook `data` keys Signet delivered for a submitter (its real webhook, through the receiver). */
async function webhookData(eventType: string, submitterId: number): Promise<Record<string, unknown>> {
  const [request] = (
    await receiver.waitFor(
      (requests) => requests.some((r) => r.json?.event_type === eventType && r.json.data.id === submitterId),
      30_000,
    )
  ).filter((r) => r.json?.event_type === eventType && r.json.data.id === submitterId);
  return request!.json.data;
}

/** Field values by name, as stored. */
async function savedValues(submitterId: number): Promise<Record<string, unknown>> {
  const submitter = await t.db.submitter.findUniqueOrThrow({
    where: { id: submitterId },
    include: { submission: true },
  });
  const fields = submitter.submission.templateFields as { uuid: string; name: string }[];
  const values = submitter.values as Record<string, unknown>;
  return Object.fromEntries(fields.filter((f) => f.uuid in values).map((f) => [f.name, values[f.uuid]]));
}

beforeAll(async () => {
  partner = createServer((request, response) => {
    const html = partnerPages.get(new URL(request.url ?? '/', 'http://partner').pathname);
    response.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    response.end(html ?? 'not found');
  });
  await new Promise<void>((resolve) => partner.listen(0, '127.0.0.1', resolve));
  const port = (partner.address() as AddressInfo).port;
  allowedOrigin = `http://localhost:${port}`;
  refusedOrigin = `http://127.0.0.1:${port}`;
  smtp = await startSmtpServer();
  receiver = await startReceiver();
  t = await startTestApp({
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Signet <signet@example.test>',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      EMBED_ORIGINS: allowedOrigin,
    },
  });
  expect(new URL(t.url).origin).not.toBe(allowedOrigin);
  alice = await t.createAccount({ name: 'Acme Ltd', email: 'alice@embedding.test' });
  const hook = await graphql(
    t.url,
    'mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }',
    {
      key: alice.apiKey,
      variables: {
        input: { url: `${receiver.url}/hooks`, events: ['form.viewed', 'form.completed', 'form.declined'] },
      },
    },
  );
  expect(hook.body.errors).toBeUndefined();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
  await receiver?.close();
  await new Promise((resolve) => partner?.close(resolve));
});

describe('a signer’s link (/s/{slug}) on a partner’s page', () => {
  let templateId: number;
  beforeAll(async () => {
    templateId = (await createTemplate('Partner NDA')).id;
  });

  it('loads, prefills and locks, completes; the partner receives init, load and completed', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'sam@signer.test', external_id: 'sam-1' }],
    });
    const submitter = created.json[0] as { id: number; submission_id: number; embed_src: string };
    const values = escapeAttribute(JSON.stringify({ company: 'Acme Corp', Name: 'Sam Prefilled' }));
    const { page } = await openPartnerPage(
      allowedOrigin,
      '/sign',
      `<signet-form data-src="${submitter.embed_src}" data-values="${values}" ` +
        'data-readonly-fields="Company" data-go-to-last="true"></signet-form>',
    );
    const frame = formIn(page);
    await frame.locator('.page[data-rendered="true"]').first().waitFor();
    const [init, load] = await waitForEvents(page, ['init', 'load']);
    expect(init).toEqual({ type: 'init', custom: true, detail: null });
    // The submitter as the form.viewed webhook delivers it: the same keys, the same submitter.
    const viewed = await webhookData('form.viewed', submitter.id);
    expect(Object.keys(load!.detail)).toEqual(Object.keys(viewed));
    expect(load!.detail).toMatchObject({
      id: submitter.id,
      submission_id: submitter.submission_id,
      email: 'sam@signer.test',
      external_id: 'sam-1',
      role: 'Signer',
      submitter_status: 'opened',
      completed_at: null,
      template: { id: templateId, name: 'Partner NDA' },
    });

    // data-values filled the name (editable) and the company, which data-readonly-fields locked.
    await expectInPage(frame.getByRole('textbox', { name: 'Name (required)' })).toHaveValue('Sam Prefilled');
    await expectInPage(frame.getByRole('textbox', { name: /^Company/ })).toHaveCount(0);
    await expectInPage(frame.locator('.field.readonly[data-field-name="Company"]')).toContainText('Acme Corp');
    // The embedded form has no Decline button unless data-with-decline asks for one (DocuSeal's default).
    await expectInPage(frame.locator('#decline-button')).toBeHidden();
    // data-go-to-last: the form opens at the first field still to fill (the name is prefilled).
    await expectInPage(frame.getByRole('button', { name: 'Signature (required)' })).toBeFocused();
    await expectInPage(frame.locator('.form-header h1')).toHaveText('Partner NDA');

    await frame.getByRole('textbox', { name: 'Name (required)' }).fill('Sam Signer');
    await typeSignature(frame, 'Sam Signer');
    await frame.locator('#complete-button').click();
    await frame.getByText('Thank you! You have completed the form.').waitFor();
    const events = await waitForEvents(page, ['init', 'load', 'completed']);
    const completed = events[2]!;
    expect(completed.custom).toBe(true);
    expect(completed.detail).toMatchObject({
      id: submitter.id,
      submitter_status: 'completed',
      status: 'completed',
      completed_at: expect.stringMatching(/Z$/),
    });
    expect(completed.detail.values).toEqual(
      expect.arrayContaining([
        { field: 'Name', value: 'Sam Signer' },
        { field: 'Company', value: 'Acme Corp' },
      ]),
    );
    expect(await savedValues(submitter.id)).toMatchObject({ Name: 'Sam Signer', Company: 'Acme Corp' });
    // The form.completed webhook carries the same shape.
    const webhook = await webhookData('form.completed', submitter.id);
    expect(Object.keys(completed.detail)).toEqual(Object.keys(webhook));
    // The same values (signed file URLs differ only in their token's expiry).
    const unsigned = (values: unknown) => JSON.stringify(values).replace(/\/file\/[^/"]+\//g, '/file/<token>/');
    expect(unsigned(completed.detail.values)).toBe(unsigned(webhook.values));

    // The same events reached the page as messages from Signet's origin (what a plain iframe gets).
    expect(await hostMessages(page)).toEqual(
      ['init', 'load', 'completed'].map((type) => ({ origin: new URL(t.url).origin, type })),
    );
  });

  it('declines with data-with-decline: the partner receives declined with the reason', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'dee@signer.test' }],
    });
    const submitter = created.json[0] as { id: number; embed_src: string };
    // DocuSeal's element name and its React wrapper's way of writing booleans.
    const { page } = await openPartnerPage(
      allowedOrigin,
      '/decline',
      `<docuseal-form data-src="${submitter.embed_src}" data-with-decline="true" data-with-title="false" ` +
        `data-logo="${LOGO}"></docuseal-form>`,
    );
    const frame = formIn(page);
    await waitForEvents(page, ['init', 'load']);
    // data-logo is drawn by the partner's page above the frame; data-with-title="false" hides the title.
    await expectInPage(page.locator('docuseal-form img.logo')).toHaveAttribute('src', LOGO);
    await expectInPage(frame.locator('.form-header')).toContainText('You sign as Signer');
    await expectInPage(frame.locator('.form-header h1')).toHaveCount(0);
    await frame.locator('#decline-button').click();
    const dialog = frame.locator('dialog.decline-dialog');
    await dialog.getByLabel('Reason').fill('Wrong company name');
    await dialog.getByRole('button', { name: 'Decline' }).click();
    await frame.getByRole('heading', { name: 'Form has been declined.' }).waitFor();
    const declined = (await waitForEvents(page, ['init', 'load', 'declined']))[2]!;
    expect(declined).toMatchObject({
      custom: true,
      detail: {
        id: submitter.id,
        status: 'declined',
        submitter_status: 'declined',
        decline_reason: 'Wrong company name',
        declined_at: expect.stringMatching(/Z$/),
      },
    });
    const webhook = await webhookData('form.declined', submitter.id);
    expect(Object.keys(declined.detail)).toEqual(Object.keys(webhook));
  });

  it('data-language (DocuSeal’s) opens the form in that language, right to left for Arabic', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      // The submitter's own language loses to the page's data-language.
      submitters: [{ role: 'Signer', email: 'lang@signer.test', language: 'de' }],
    });
    const submitter = created.json[0] as { embed_src: string };
    const { page } = await openPartnerPage(
      allowedOrigin,
      '/language',
      `<docuseal-form data-src="${submitter.embed_src}" data-language="ar"></docuseal-form>`,
    );
    await waitForEvents(page, ['init', 'load']);
    const frameUrl = new URL(
      await page.locator('docuseal-form').evaluate((e) => e.shadowRoot!.querySelector('iframe')!.src),
    );
    expect(frameUrl.searchParams.get('lang')).toBe('ar');
    const frame = formIn(page);
    await expectInPage(frame.locator('html')).toHaveAttribute('lang', 'ar');
    await expectInPage(frame.locator('html')).toHaveAttribute('dir', 'rtl');
    // A change of the attribute reloads the form in the new language.
    await page.locator('docuseal-form').evaluate((e) => e.setAttribute('data-language', 'fr'));
    await expectInPage(frame.locator('html')).toHaveAttribute('lang', 'fr');
    await expectInPage(frame.locator('html')).toHaveAttribute('dir', 'ltr');
  });

  it('a plain iframe on the partner’s origin receives the events as postMessage', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'ivy@signer.test' }],
    });
    const submitter = created.json[0] as { id: number; embed_src: string };
    partnerPages.set(
      '/plain',
      `<!doctype html><title>Partner</title><script>
        window.hostMessages = [];
        window.addEventListener('message', (e) => window.hostMessages.push({ origin: e.origin, data: e.data }));
      </script><iframe src="${submitter.embed_src}" width="900" height="700"></iframe>`,
    );
    const { page } = await openBrowserPage();
    await page.goto(`${allowedOrigin}/plain`);
    await expect
      .poll(
        () =>
          page.evaluate(() =>
            (window as unknown as { hostMessages: { data: { type: string } }[] }).hostMessages.map((m) => m.data.type),
          ),
        { timeout: PAGE_TIMEOUT_MS },
      )
      .toEqual(['init', 'load']);
    const messages = await page.evaluate(
      () => (window as unknown as { hostMessages: { origin: string; data: any }[] }).hostMessages,
    );
    expect(messages[1]).toMatchObject({
      origin: new URL(t.url).origin,
      data: { source: 'signet-form', type: 'load', detail: { id: submitter.id, email: 'ivy@signer.test' } },
    });
  });

  it('fits the window below the partner’s heading: Complete is on screen without scrolling the page', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'fit@signer.test' }],
    });
    const submitter = created.json[0] as { embed_src: string };
    const { page } = await openPartnerPage(
      allowedOrigin,
      '/fit',
      `<signet-form data-src="${submitter.embed_src}"></signet-form>`,
    );
    const complete = formIn(page).locator('#complete-button');
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await page.setViewportSize(viewport);
      await expectInPage(complete).toBeVisible();
      // The page around the frame does not scroll, and the button's box (in the page's
      // coordinates) ends inside the window.
      await expect
        .poll(
          async () => {
            const box = await complete.boundingBox();
            const page_ = await page.evaluate(() => ({
              scroll: document.documentElement.scrollHeight,
              window: document.documentElement.clientHeight,
            }));
            return box !== null && box.y >= 0 && box.y + box.height <= viewport.height && page_.scroll <= page_.window;
          },
          { timeout: PAGE_TIMEOUT_MS },
        )
        .toBe(true);
    }
  });

  it('on an origin not in EMBED_ORIGINS the browser refuses the frame: no form, no event', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'mal@signer.test' }],
    });
    const submitter = created.json[0] as { embed_src: string };
    const refusal = /frame-ancestors/;
    const watched = await openBrowserPage();
    const refused = watched.page.waitForEvent('console', (message) => refusal.test(message.text()));
    partnerPages.set('/refused', partnerPage(`<signet-form data-src="${submitter.embed_src}"></signet-form>`));
    await watched.page.goto(`${refusedOrigin}/refused`);
    expect((await refused).text()).toContain(`frame-ancestors 'self' ${allowedOrigin}`);
    await expectInPage(formIn(watched.page).locator('#signing-form')).toHaveCount(0);
    expect(await hostEvents(watched.page)).toEqual([]);
    expect(await hostMessages(watched.page)).toEqual([]);
    // Nothing was opened: the signer's form was never shown.
    const row = await t.db.submitter.findFirstOrThrow({ where: { email: 'mal@signer.test' } });
    expect(row.openedAt).toBeNull();
  });
});

describe('a template link (/d/{slug}) on a partner’s page', () => {
  it('starts the signer’s submission from data-email and the other attributes, completes, finds it again', async () => {
    const template = await createTemplate('Partner Order');
    const values = escapeAttribute(JSON.stringify({ Company: 'Linked Co' }));
    const element =
      `<signet-form data-src="${t.url}/d/${template.slug}" data-email="Lee@Partner.test" data-name="Lee Linked" ` +
      `data-external-id="order-77" data-values="${values}" data-readonly-fields="Company" ` +
      `data-send-copy-email="false" data-metadata="${escapeAttribute('{"order":77}')}"></signet-form>`;
    const { page } = await openPartnerPage(allowedOrigin, '/order', element);
    const frame = formIn(page);
    await frame.locator('.page[data-rendered="true"]').first().waitFor();
    // One init (from the template link's page), then the signer's form loads.
    const [, load] = await waitForEvents(page, ['init', 'load']);
    expect(load!.detail).toMatchObject({
      email: 'lee@partner.test',
      name: 'Lee Linked',
      external_id: 'order-77',
      metadata: { order: 77 },
      template: { id: template.id },
    });
    const submitterId = load!.detail.id as number;
    const stored = await t.db.submitter.findUniqueOrThrow({
      where: { id: submitterId },
      include: { submission: true },
    });
    expect(stored.submission.source).toBe('link');
    expect(stored.preferences).toMatchObject({ send_email: false });
    // The server stored the values and made the company read-only.
    const company = (stored.submission.templateFields as { name: string; readonly?: boolean }[]).find(
      (f) => f.name === 'Company',
    );
    expect(company?.readonly).toBe(true);
    await expectInPage(frame.locator('.field.readonly[data-field-name="Company"]')).toContainText('Linked Co');

    await frame.getByRole('textbox', { name: 'Name (required)' }).fill('Lee Linked');
    await typeSignature(frame, 'Lee Linked');
    await frame.locator('#complete-button').click();
    await frame.getByText('Thank you! You have completed the form.').waitFor();
    const completed = (await waitForEvents(page, ['init', 'load', 'completed']))[2]!;
    expect(completed.detail).toMatchObject({ id: submitterId, status: 'completed' });
    expect(await savedValues(submitterId)).toMatchObject({ Name: 'Lee Linked', Company: 'Linked Co' });

    // The owner is told; the signer got no request (the link's signer is on the form) and, with
    // data-send-copy-email="false", no copy.
    await smtp.waitForMessages(1, 60_000);
    await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
    const to = (address: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));
    expect(to('alice@embedding.test').map((m) => m.parsed.subject)).toEqual([
      'Partner Order has been completed by Lee Linked',
    ]);
    expect(to('lee@partner.test')).toEqual([]);

    // The partner's page again: the same signer's form (completed), not a new submission.
    const before = await t.db.submission.count();
    await page.reload();
    const again = await waitForEvents(page, ['init', 'load']);
    expect(again[1]!.detail).toMatchObject({ id: submitterId, submitter_status: 'completed' });
    await formIn(page).getByText('Form has been completed already.').waitFor();
    expect(await t.db.submission.count()).toBe(before);
  });

  it('keeps data-language from the template link to the started signer’s form', async () => {
    const template = await createTemplate('Partner Language');
    const { page } = await openPartnerPage(
      allowedOrigin,
      '/template-language',
      `<docuseal-form data-src="${t.url}/d/${template.slug}" data-email="lang@partner.test" ` +
        `data-language="ja"></docuseal-form>`,
    );
    await waitForEvents(page, ['init', 'load']);
    const frame = formIn(page);
    await frame.locator('.page[data-rendered="true"]').first().waitFor();
    expect(await frame.locator('html').evaluate(() => window.location.pathname)).toMatch(/^\/s\//);
    await expectInPage(frame.locator('html')).toHaveAttribute('lang', 'ja');
  });

  it('without data-email the page asks for it; after completing, the whole page goes to the redirect', async () => {
    const template = await createTemplate('Partner Waiver');
    partnerPages.set('/thanks', '<!doctype html><title>Thanks</title><h1>Back at the partner</h1>');
    const { page } = await openPartnerPage(
      allowedOrigin,
      '/waiver',
      `<docuseal-form data-src="${t.url}/d/${template.slug}" ` +
        `data-completed-redirect-url="${allowedOrigin}/thanks"></docuseal-form>`,
    );
    const frame = formIn(page);
    await waitForEvents(page, ['init']);
    await expectInPage(frame.getByRole('heading', { name: 'Partner Waiver' })).toBeVisible();
    await frame.getByLabel('Email').fill('not an address');
    await frame.getByRole('button', { name: 'Continue' }).click();
    await expectInPage(frame.getByRole('alert')).toHaveText('Please enter a valid email address.');
    await frame.getByLabel('Email').fill('walk-in@partner.test');
    await frame.getByRole('button', { name: 'Continue' }).click();
    await frame.locator('.page[data-rendered="true"]').first().waitFor();
    const [, load] = await waitForEvents(page, ['init', 'load']);
    expect(load!.detail).toMatchObject({ email: 'walk-in@partner.test', template: { id: template.id } });
    // data-completed-redirect-url: DocuSeal's embedded form takes the page there; so does the element.
    await frame.getByRole('textbox', { name: 'Name (required)' }).fill('Walk In');
    await frame.getByRole('textbox', { name: 'Company (required)' }).fill('Walk In Ltd');
    await typeSignature(frame, 'Walk In');
    await frame.locator('#complete-button').click();
    await page.waitForURL(`${allowedOrigin}/thanks`);
    await page.getByRole('heading', { name: 'Back at the partner' }).waitFor();
    const stored = await t.db.submitter.findUniqueOrThrow({ where: { id: load!.detail.id } });
    expect(stored.completedAt).not.toBeNull();
  });
});
