/**
 * The signer's page at /s/{slug}, in Debian's Chromium (playwright-core), against a real service
 * with an in-process SMTP server:
 * - the main job end to end: a template merged from two real PDFs with two roles, a preserved
 *   submission, the first signer follows the emailed link, types, draws a signature with the
 *   mouse and completes; only then is the second signer emailed, who types a signature; the final
 *   PDFs carry every value on the right page (pdftotext), are signed over the whole file (pdfsig),
 *   and the audit log's hashes match the files;
 * - saved values survive a reload; a pattern is checked in the page and nothing completes; server
 *   refusals appear next to the field; decline; closed forms; every field type; uploads refused
 *   by the server; a phone-sized touch screen; embedding in an iframe on another origin;
 * - every test: no request leaves the service's origin, no Content-Security-Policy violation, no
 *   uncaught page error.
 * The page is checked only with web-first assertions (expectInPage, test/helpers/browser.ts), which
 * wait for the page to show what is expected: nothing is read right after an action.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContextOptions, type Locator } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import {
  closeWatched,
  createSubmission as createSubmissionWith,
  createTemplate as createTemplateWith,
  drawWithMouse,
  drawWithTouch,
  openWatchedPage,
  type Watched,
  waitForForm,
} from './helpers/signing-page.ts';
import { pdfsigValidPades } from './helpers/pades-verifier.ts';
import { freePort, startService, testServiceEnv } from './helpers/processes.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { signatureMatches, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

// A browser, a PDF renderer and the completion job share two cores with other suites.
vi.setConfig({ testTimeout: 90_000 });

let t: TestApp;
let smtp: TestSmtpServer;
let receiver: Receiver;
let alice: CreatedAccount;
let browser: Browser;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-signing-page-'));

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));
const linkIn = (text: string) => /https?:\/\/\S+\/s\/[A-Za-z0-9_-]+/.exec(text)?.[0];

/** Pages opened by a test (test/helpers/signing-page.ts watches their requests and errors). */
const opened: Watched[] = [];
/** Origins a test allows besides the service's (the iframe test's embedding page). */
let extraOrigins: string[] = [];

async function openBrowserPage(options: BrowserContextOptions = {}): Promise<Watched> {
  const watched = await openWatchedPage(browser, options);
  opened.push(watched);
  return watched;
}

afterEach(async (context) => {
  for (const watched of opened.splice(0)) {
    if (context.task.result?.state === 'fail') {
      // What the signer would have seen: messages on the page (the failure alone rarely says).
      const shown = await watched.page
        .locator('.alert:not([hidden]), .dialog-error, .field-error:not([hidden]), .status, .state')
        .allTextContents()
        .catch(() => []);
      console.error('page messages at failure:', shown.filter(Boolean), watched.problems);
    }
    await closeWatched(watched, t.url, extraOrigins);
  }
  extraOrigins = [];
});

/** The message shown at a field: the last element its input's aria-describedby names. */
async function errorOf(input: Locator): Promise<Locator> {
  const ids = (await input.getAttribute('aria-describedby'))?.split(' ') ?? [];
  expect(ids.length, 'the input names its message in aria-describedby').toBeGreaterThan(0);
  return input.page().locator(`#${ids.at(-1)}`);
}

async function download(url: string, name: string): Promise<{ file: string; bytes: Buffer }> {
  const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
  const file = path.join(tmp, name);
  fs.writeFileSync(file, bytes);
  return { file, bytes };
}
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const pdftotext = (file: string, page: number) =>
  execFileSync('pdftotext', ['-f', String(page), '-l', String(page), file, '-']).toString();
const pdfsig = (file: string) => {
  try {
    return execFileSync('pdfsig', [file]).toString();
  } catch (error) {
    return String((error as { stdout?: Buffer }).stdout ?? error);
  }
};

/** A one-document template from a fixture PDF (test/helpers/signing-page.ts). */
const createTemplate = (name: string, fields: unknown[], file = 'docuseal-sample-document.pdf') =>
  createTemplateWith(api, name, fields, file);

/** A submission for one signer, no email (test/helpers/signing-page.ts). */
const createSubmission = (
  templateId: number,
  submitter: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) => createSubmissionWith(api, templateId, submitter, extra);

beforeAll(async () => {
  smtp = await startSmtpServer();
  receiver = await startReceiver();
  // The webhook receiver is on loopback: allowed for this test (WEBHOOK_ALLOW_PRIVATE).
  t = await startTestApp({
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@example.test>', WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
  alice = await t.createAccount({ name: 'Acme Ltd', email: 'alice@signing-page.test' });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
  await receiver?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the main job in a browser', () => {
  it('two signers in order sign two real PDFs; the final documents are filled, signed and audited', async () => {
    // Two templates from two real PDFs with the same two roles, merged into one.
    const sampleId = await createTemplate('Sample', [
      { name: 'Full Name', role: 'Client', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
      {
        name: 'Client Signature',
        type: 'signature',
        role: 'Client',
        areas: [{ x: 60, y: 170, w: 200, h: 60, page: 1 }],
      },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 320, y: 120, w: 220, h: 24, page: 1 }] },
    ]);
    const formId = await createTemplate(
      'Form',
      [
        { name: 'Company', role: 'Client', areas: [{ x: 60, y: 40, w: 240, h: 22, page: 1 }] },
        { name: 'Manager Title', role: 'Manager', areas: [{ x: 60, y: 40, w: 240, h: 22, page: 2 }] },
        {
          name: 'Manager Signature',
          type: 'signature',
          role: 'Manager',
          areas: [{ x: 320, y: 40, w: 200, h: 50, page: 2 }],
        },
      ],
      'pdfjs-form_two_pages.pdf',
    );
    const merged = await api('POST', '/templates/merge', { template_ids: [sampleId, formId], name: 'Contract pack' });
    expect(merged.status, JSON.stringify(merged.json)).toBe(200);
    const templateId = merged.json.id;
    expect(merged.json.documents).toHaveLength(2);
    const template = (await api('GET', `/templates/${templateId}`)).json;

    // The account's webhook: every form event and the submission's creation and completion.
    const hook = await graphql(
      t.url,
      'mutation ($input: CreateWebhookEndpointInput!) ' +
        '{ createWebhookEndpoint(input: $input) { secret endpoint { id } } }',
      {
        key: alice.apiKey,
        variables: {
          input: {
            url: `${receiver.url}/hooks`,
            events: [
              'form.viewed',
              'form.started',
              'form.completed',
              'form.declined',
              'submission.created',
              'submission.completed',
            ],
          },
        },
      },
    );
    expect(hook.body.errors).toBeUndefined();
    const secret = hook.body.data.createWebhookEndpoint.secret as string;

    const created = await api('POST', '/submissions', {
      template_id: templateId,
      order: 'preserved',
      submitters: [
        { role: 'Client', email: 'chloe@client.test', name: 'Chloé Durand' },
        { role: 'Manager', email: 'max@manager.test', name: 'Max Müller' },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const [client, manager] = created.json;
    const submissionId = client.submission_id;

    // Only the first party is emailed.
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(mailsTo('chloe@client.test')).toHaveLength(1);
    expect(mailsTo('max@manager.test')).toHaveLength(0);
    const clientLink = linkIn(mailsTo('chloe@client.test')[0]!.parsed.text ?? '');
    expect(clientLink).toBe(client.embed_src);

    // The second party's link, opened early, says whom it waits for and cannot complete.
    {
      const { page } = await openBrowserPage();
      await page.goto(manager.embed_src);
      await waitForForm(page);
      await expectInPage(page.locator('.notice.waiting')).toHaveText('Waiting for Client to complete the form.');
      await expectInPage(page.locator('#complete-button')).toBeDisabled();
    }

    // The first party fills in the page opened from the email.
    {
      const { page } = await openBrowserPage();
      await page.goto(clientLink!);
      await waitForForm(page);
      await expectInPage(page.locator('.page')).toHaveCount(3);
      await page.getByRole('textbox', { name: 'Full Name (required)' }).fill('Chloé Durand');
      await page.getByRole('textbox', { name: 'Company (required)' }).fill('Durand Consulting SARL');
      await page.getByRole('button', { name: 'Client Signature (required)' }).click();
      await acceptConsent(page);
      const dialog = page.locator('dialog.signature-dialog');
      await dialog.waitFor();
      await drawWithMouse(page, 'dialog.signature-dialog canvas.signature-canvas');
      await dialog.getByRole('button', { name: 'Apply signature' }).click();
      await page.locator('.type-signature button img').waitFor();
      await page.locator('#complete-button').click();
      await page.getByText('Thank you! You have completed the form.').waitFor();
      // The document is not complete yet: the page says the copies come later.
      await page.getByText('once every party has signed').waitFor();
    }

    // Now, and only now, the second party is emailed.
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(mailsTo('max@manager.test')).toHaveLength(1);
    expect(mailsTo('chloe@client.test')).toHaveLength(1);
    const managerLink = linkIn(mailsTo('max@manager.test')[0]!.parsed.text ?? '');
    expect(managerLink).toBe(manager.embed_src);

    {
      const { page } = await openBrowserPage();
      await page.goto(managerLink!);
      await waitForForm(page);
      await expectInPage(page.locator('.notice.waiting')).toBeHidden();
      // The client's values are shown, read-only.
      await expectInPage(page.locator('.field.other[data-field-name="Full Name"]')).toContainText('Chloé Durand');
      await expectInPage(page.locator('.field.other[data-field-name="Client Signature"] img')).toHaveCount(1);
      await page.getByRole('textbox', { name: 'Manager Name (required)' }).fill('Max Müller');
      await page.getByRole('textbox', { name: 'Manager Title (required)' }).fill('Head of Procurement');
      await page.getByRole('button', { name: 'Manager Signature (required)' }).click();
      await acceptConsent(page);
      const dialog = page.locator('dialog.signature-dialog');
      await dialog.getByRole('tab', { name: 'Type' }).click();
      await dialog.getByLabel('Type your name').fill('Max Müller');
      await dialog.getByRole('button', { name: 'Apply signature' }).click();
      await page.locator('.type-signature.own button img').waitFor();
      await page.locator('#complete-button').click();
      await page.getByText('Thank you! You have completed the form.').waitFor();
      // The page polls until the completion job has produced the signed copies.
      await expectInPage(page.locator('a.download-link')).toHaveCount(2, { timeout: 60_000 });
      const href = await page.locator('a.download-link').first().getAttribute('href');
      expect(href).toMatch(/^\/file\//);
    }

    await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
    const done = (await api('GET', `/submissions/${submissionId}`)).json;
    expect(done.status).toBe('completed');
    expect(done.documents.map((d: { name: string }) => d.name)).toEqual(['Sample', 'Form']);

    const sample = await download(done.documents[0].url, 'sample.pdf');
    const form = await download(done.documents[1].url, 'form.pdf');
    expect(pdftotext(sample.file, 1)).toContain('Chloé Durand');
    expect(pdftotext(sample.file, 1)).toContain('Max Müller');
    expect(pdftotext(form.file, 1)).toContain('Durand Consulting SARL');
    expect(pdftotext(form.file, 1)).not.toContain('Head of Procurement');
    expect(pdftotext(form.file, 2)).toContain('Head of Procurement');
    for (const file of [sample.file, form.file]) {
      const verdict = pdfsig(file);
      expect(verdict).toContain('Signature is Valid');
      // PAdES B-LT (issue 17): covering the whole revision it signed (the DSS follows it).
      expect(pdfsigValidPades(fs.readFileSync(file))).toBe(true);
    }
    // One byte changed inside the signed range (in the first stream): no longer valid.
    const tampered = Buffer.from(sample.bytes);
    const at = tampered.indexOf('stream') + 'stream'.length + 20;
    expect(at).toBeLessThan(Number(/\/ByteRange\s*\[\s*\d+\s+(\d+)/.exec(tampered.toString('latin1'))![1]));
    tampered[at] = tampered[at]! ^ 0x01;
    fs.writeFileSync(path.join(tmp, 'tampered.pdf'), tampered);
    expect(pdfsig(path.join(tmp, 'tampered.pdf'))).not.toContain('Signature is Valid');

    // The webhooks of this run: each event once, in the order it happened, signed, with the
    // signer's IP and browser, the values and the signed documents.
    type Hook = { event_type: string; timestamp: string; data: Record<string, any> };
    const hooks = (
      await receiver.waitFor(
        (r) =>
          r.filter((x) => x.json?.data?.submission_id === submissionId || x.json?.data?.id === submissionId).length >=
          8,
        60_000,
      )
    ).filter(
      (x) =>
        x.json?.data?.submission_id === submissionId ||
        (x.json?.event_type.startsWith('submission.') && x.json?.data?.id === submissionId),
    );
    for (const request of hooks) {
      expect(request.path).toBe('/hooks');
      expect(signatureMatches(request.headers['x-docuseal-signature'], secret, request.body)).toBe(true);
    }
    // By the time each happened; events of the same millisecond in the order they cause each other.
    const rank = ['submission.created', 'form.viewed', 'form.started', 'form.completed', 'submission.completed'];
    const events = hooks
      .map((x) => x.json as Hook)
      .sort(
        (a, b) => a.timestamp.localeCompare(b.timestamp) || rank.indexOf(a.event_type) - rank.indexOf(b.event_type),
      );
    const who = (e: Hook) =>
      e.event_type.startsWith('form.')
        ? e.data.id === client.id
          ? 'client'
          : e.data.id === manager.id
            ? 'manager'
            : '?'
        : 'submission';
    const sequence = events.map((e) => `${e.event_type} ${who(e)}`);
    // The manager looked first (while waiting), once more later: one form.viewed (first open only).
    expect(sequence).toEqual([
      'submission.created submission',
      'form.viewed manager',
      'form.viewed client',
      'form.started client',
      'form.completed client',
      'form.started manager',
      'form.completed manager',
      'submission.completed submission',
    ]);
    const clientCompleted = events.find((e) => e.event_type === 'form.completed' && e.data.id === client.id)!.data;
    expect(clientCompleted).toMatchObject({
      email: 'chloe@client.test',
      role: 'Client',
      ip: '127.0.0.1',
      submitter_status: 'completed',
    });
    expect(clientCompleted.ua).toContain('Chrome');
    expect(clientCompleted.values).toEqual(
      expect.arrayContaining([
        { field: 'Full Name', value: 'Chloé Durand' },
        { field: 'Company', value: 'Durand Consulting SARL' },
      ]),
    );
    const submissionCompleted = events.at(-1)!.data;
    expect(submissionCompleted).toMatchObject({ id: submissionId, status: 'completed' });
    expect(submissionCompleted.documents.map((d: { name: string }) => d.name)).toEqual(['Sample', 'Form']);
    expect(submissionCompleted.audit_log_url).toMatch(/\/file\//);

    // The audit log: signed, and its hashes are those of the original and the final files.
    const log = await download(done.audit_log_url, 'audit.pdf');
    expect(pdfsig(log.file)).toContain('Signature is Valid');
    const logText = execFileSync('pdftotext', [log.file, '-']).toString().replace(/\s/g, '');
    for (const final of [sample, form]) expect(logText).toContain(sha256(final.bytes));
    for (const document of template.documents as { url: string }[]) {
      const original = await download(document.url, 'original.pdf');
      expect(logText).toContain(sha256(original.bytes));
    }
  }, 180_000);
});

/** A PNG with some ink, made by the browser (a screenshot of text). */
async function inkPng(text: string): Promise<Buffer> {
  const page = await browser.newPage();
  await page.setContent(`<p style="margin:0;padding:8px;font:40px serif;display:inline-block">${text}</p>`);
  const png = await page.locator('p').screenshot({ omitBackground: true });
  await page.close();
  return png;
}

/** The signer's saved values by field name (the database row, keyed by field uuid). */
async function savedValues(submitterId: number): Promise<Record<string, unknown>> {
  const submitter = await t.db.submitter.findUniqueOrThrow({
    where: { id: submitterId },
    include: { submission: true },
  });
  const fields = submitter.submission.templateFields as { uuid: string; name: string }[];
  const values = submitter.values as Record<string, unknown>;
  return Object.fromEntries(fields.filter((f) => f.uuid in values).map((f) => [f.name, values[f.uuid]]));
}

describe('filling the form', () => {
  let templateId: number;
  beforeAll(async () => {
    templateId = await createTemplate('Order', [
      { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
      { name: 'Agree', type: 'checkbox', role: 'Signer', areas: [{ x: 320, y: 120, w: 18, h: 18, page: 1 }] },
      {
        name: 'Size',
        type: 'select',
        role: 'Signer',
        options: ['S', 'M', 'L'],
        areas: [{ x: 360, y: 120, w: 80, h: 24, page: 1 }],
      },
      {
        name: 'ZIP',
        role: 'Signer',
        validation: { pattern: '[0-9]{5}', message: 'Enter the 5-digit ZIP code' },
        areas: [{ x: 60, y: 160, w: 100, h: 24, page: 1 }],
      },
      {
        name: 'Phone',
        type: 'phone',
        role: 'Signer',
        required: false,
        areas: [{ x: 180, y: 160, w: 160, h: 24, page: 1 }],
      },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 200, w: 200, h: 60, page: 1 }] },
    ]);
  });

  it('saves values as the signer goes: a reload resumes where they left off', async () => {
    const submitter = await createSubmission(templateId, { name: 'Grace Hopper' });
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await page.getByRole('textbox', { name: 'Name (required)' }).fill('Grace Hopper');
    await page.getByRole('checkbox', { name: 'Agree (required)' }).check();
    await page.getByRole('combobox', { name: 'Size (required)' }).selectOption('M');
    await page.getByRole('button', { name: 'Signature (required)' }).click();
    await acceptConsent(page);
    await drawWithMouse(page, 'dialog.signature-dialog canvas.signature-canvas');
    await page.getByRole('button', { name: 'Apply signature' }).click();
    await page.locator('.type-signature button img').waitFor();
    await expectInPage(page.locator('.status')).toHaveText('All changes saved.');
    expect(await savedValues(submitter.id)).toMatchObject({
      Name: 'Grace Hopper',
      Agree: true,
      Size: 'M',
      Signature: expect.any(String),
    });

    await page.reload();
    await waitForForm(page);
    await expectInPage(page.getByRole('textbox', { name: 'Name (required)' })).toHaveValue('Grace Hopper');
    await expectInPage(page.getByRole('checkbox', { name: 'Agree (required)' })).toBeChecked();
    await expectInPage(page.getByRole('combobox', { name: 'Size (required)' })).toHaveValue('M');
    await page.locator('.type-signature button img').waitFor();
    await expectInPage(page.locator('.progress')).toHaveText('4 of 5 required fields filled');
    // Nothing completed by saving.
    expect((await api('GET', `/submitters/${submitter.id}`)).json.completed_at).toBeNull();
  });

  it('checks the pattern in the page: the message is shown at the field and nothing completes', async () => {
    const submitter = await createSubmission(templateId);
    const { page } = await openBrowserPage();
    const completions: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/graphql') && (request.postData() ?? '').includes('completeSigningForm'))
        completions.push(request.url());
    });
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await page.getByRole('textbox', { name: 'Name (required)' }).fill('Alan Turing');
    await page.getByRole('checkbox', { name: 'Agree (required)' }).check();
    await page.getByRole('combobox', { name: 'Size (required)' }).selectOption('S');
    const zip = page.getByRole('textbox', { name: 'ZIP (required)' });
    await zip.fill('12a45');
    await page.getByRole('button', { name: 'Signature (required)' }).click();
    await acceptConsent(page);
    await page.getByRole('tab', { name: 'Type' }).click();
    await page.getByLabel('Type your name').fill('Alan Turing');
    await page.getByRole('button', { name: 'Apply signature' }).click();
    await page.locator('.type-signature button img').waitFor();

    await page.locator('#complete-button').click();
    const error = await errorOf(zip);
    await expectInPage(error).toHaveText('Enter the 5-digit ZIP code');
    await expectInPage(error).toBeVisible();
    await expectInPage(zip).toHaveAttribute('aria-invalid', 'true');
    await expectInPage(zip).toBeFocused();
    await expectInPage(page.locator('.alert')).toHaveText('Enter the 5-digit ZIP code');
    expect(completions).toEqual([]);
    expect((await api('GET', `/submitters/${submitter.id}`)).json.completed_at).toBeNull();

    // Corrected, the message goes away as the signer types, and the form completes.
    await zip.fill('12345');
    await expectInPage(error).toBeHidden();
    await page.locator('#complete-button').click();
    await page.getByText('Thank you! You have completed the form.').waitFor();
    expect(completions).toHaveLength(1);
    expect((await api('GET', `/submitters/${submitter.id}`)).json.completed_at).toMatch(/Z$/);
  });

  it('shows the server’s refusal next to the field it names', async () => {
    const submitter = await createSubmission(templateId);
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await page.getByRole('textbox', { name: 'Name (required)' }).fill('Ada');
    await page.getByRole('checkbox', { name: 'Agree (required)' }).check();
    await page.getByRole('combobox', { name: 'Size (required)' }).selectOption('L');
    await page.getByRole('textbox', { name: 'ZIP (required)' }).fill('54321');
    // E.164 in shape, but no such number: the browser lets it through, the server does not.
    const phone = page.getByRole('textbox', { name: 'Phone' });
    await phone.fill('+1 000 000 0000');
    await page.getByRole('button', { name: 'Signature (required)' }).click();
    await acceptConsent(page);
    await page.getByRole('tab', { name: 'Type' }).click();
    await page.getByLabel('Type your name').fill('Ada');
    await page.getByRole('button', { name: 'Apply signature' }).click();
    await page.locator('.type-signature button img').waitFor();
    await page.locator('#complete-button').click();
    const error = await errorOf(phone);
    await expectInPage(error).toHaveText(/^Phone is invalid/);
    await expectInPage(phone).toHaveAttribute('aria-invalid', 'true');
    await expectInPage(phone).toHaveValue('+10000000000');
    expect((await api('GET', `/submitters/${submitter.id}`)).json.completed_at).toBeNull();
  });

  it('declines with a reason', async () => {
    const submitter = await createSubmission(templateId);
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await page.locator('#decline-button').click();
    const dialog = page.locator('dialog.decline-dialog');
    await dialog.getByRole('button', { name: 'Decline' }).click();
    await dialog.getByText('Please give a reason.').waitFor();
    await dialog.getByLabel('Reason').fill('The price is wrong.');
    await dialog.getByRole('button', { name: 'Decline' }).click();
    await page.getByRole('heading', { name: 'Form has been declined.' }).waitFor();
    await expectInPage(page.locator('main input, main select, main textarea, main button')).toHaveCount(0);
    const row = await t.db.submitter.findUniqueOrThrow({ where: { id: submitter.id } });
    expect(row.declinedAt).not.toBeNull();
    expect(row.declineReason).toBe('The price is wrong.');
    expect((await api('GET', `/submitters/${submitter.id}`)).json.status).toBe('declined');
  });
});

describe('forms that are not open, and unknown links', () => {
  let templateId: number;
  beforeAll(async () => {
    templateId = await createTemplate('Closed', [
      { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
    ]);
  });

  it('an archived submission shows DocuSeal’s message and no inputs', async () => {
    const submitter = await createSubmission(templateId);
    expect((await api('DELETE', `/submissions/${submitter.submission_id}`)).status).toBe(200);
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await page.getByRole('heading', { name: 'Form has been archived.' }).waitFor();
    await expectInPage(page.locator('main input, main select, main textarea, main button')).toHaveCount(0);
  });

  it('an expired submission shows DocuSeal’s message and no inputs', async () => {
    const submitter = await createSubmission(templateId);
    await t.db.submission.update({
      where: { id: submitter.submission_id },
      data: { expireAt: new Date(Date.now() - 60_000) },
    });
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await page.getByRole('heading', { name: 'Form has been expired.' }).waitFor();
    await expectInPage(page.locator('main input, main select, main textarea, main button')).toHaveCount(0);
  });

  it('a completed form says so and offers the signed copies', async () => {
    const submitter = await createSubmission(templateId, { completed: true, values: { Name: 'Done Already' } });
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await page.getByRole('heading', { name: 'Form has been completed already.' }).waitFor();
    await expectInPage(page.locator('main input, main select, main textarea')).toHaveCount(0);
    await expectInPage(page.locator('a.download-link')).toHaveCount(1, { timeout: 60_000 });
    const href = (await page.locator('a.download-link').getAttribute('href'))!;
    const response = await page.request.get(new URL(href, t.url).href);
    expect(response.headers()['content-type']).toBe('application/pdf');
  });

  it('an unknown slug gets the 404 page', async () => {
    const response = await fetch(`${t.url}/s/NoSuchSlug123`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const { page } = await openBrowserPage();
    await page.goto(`${t.url}/s/NoSuchSlug123`);
    await page.getByRole('heading', { name: 'Form not found' }).waitFor();
  });
});

describe('every field type', () => {
  it('offers the right input for each type and completes with their values', async () => {
    const templateId = await createTemplate('All types', [
      {
        name: 'Name',
        areas: [
          { x: 60, y: 60, w: 220, h: 22, page: 1 },
          { x: 60, y: 420, w: 220, h: 22, page: 1 },
        ],
      },
      { name: 'Age', type: 'number', areas: [{ x: 300, y: 60, w: 60, h: 22, page: 1 }] },
      {
        name: 'Signed on',
        type: 'date',
        default_value: '{{date}}',
        areas: [{ x: 380, y: 60, w: 120, h: 22, page: 1 }],
      },
      { name: 'Agree', type: 'checkbox', areas: [{ x: 60, y: 100, w: 18, h: 18, page: 1 }] },
      {
        name: 'Color',
        type: 'radio',
        options: ['Red', 'Blue'],
        areas: [
          { x: 100, y: 100, w: 16, h: 16, page: 1, option: 'Red' },
          { x: 130, y: 100, w: 16, h: 16, page: 1, option: 'Blue' },
        ],
      },
      { name: 'Size', type: 'select', options: ['S', 'M', 'L'], areas: [{ x: 160, y: 100, w: 80, h: 22, page: 1 }] },
      {
        name: 'Toppings',
        type: 'multiple',
        options: ['Ham', 'Egg', 'Cheese'],
        areas: [{ x: 260, y: 100, w: 140, h: 22, page: 1 }],
      },
      { name: 'Code', type: 'cells', areas: [{ x: 60, y: 140, w: 160, h: 24, page: 1 }] },
      { name: 'Phone', type: 'phone', areas: [{ x: 240, y: 140, w: 160, h: 22, page: 1 }] },
      { name: 'Photo', type: 'image', areas: [{ x: 60, y: 180, w: 120, h: 80, page: 1 }] },
      { name: 'Attachments', type: 'file', areas: [{ x: 200, y: 180, w: 160, h: 30, page: 1 }] },
      { name: 'Stamp', type: 'stamp', required: false, areas: [{ x: 380, y: 180, w: 120, h: 60, page: 1 }] },
      {
        name: 'Fee',
        type: 'payment',
        required: false,
        preferences: { price: 10, currency: 'EUR' },
        areas: [{ x: 60, y: 280, w: 200, h: 40, page: 1 }],
      },
      { name: 'Initials', type: 'initials', areas: [{ x: 300, y: 280, w: 60, h: 30, page: 1 }] },
      { name: 'Signature', type: 'signature', areas: [{ x: 60, y: 340, w: 200, h: 60, page: 1 }] },
      {
        name: 'Reference',
        readonly: true,
        default_value: 'REF-42',
        areas: [{ x: 300, y: 340, w: 120, h: 22, page: 1 }],
      },
    ]);
    const submitter = await createSubmission(templateId, { role: 'First Party', name: 'Ada Lovelace' });
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    const field = (name: string) => page.locator(`.field.own[data-field-name="${name}"]`).first();

    await page.getByRole('textbox', { name: 'Name (required)' }).fill('Ada Lovelace');
    // The second area of the same field shows the value.
    await expectInPage(page.locator('.field.mirror[data-field-name="Name"]')).toContainText('Ada Lovelace');
    const age = page.getByRole('spinbutton', { name: 'Age (required)' });
    await age.fill('36');
    // {{date}}: today, in a native date input the signer may change.
    const date = field('Signed on').locator('input[type="date"]');
    const today = await page.evaluate(() => {
      const d = new Date();
      return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
    });
    await expectInPage(date).toHaveValue(today);
    await page.getByRole('checkbox', { name: 'Agree (required)' }).check();
    await page.getByRole('radio', { name: 'Color: Blue' }).check();
    await page.getByRole('combobox', { name: 'Size (required)' }).selectOption('L');
    await page.getByRole('button', { name: 'Toppings (required)' }).click();
    await page.getByRole('checkbox', { name: 'Cheese' }).check();
    await page.getByRole('checkbox', { name: 'Ham' }).check();
    // Each tick is recorded as it is made (in the options' order), not only once the dialog closes.
    await expectInPage(field('Toppings')).toContainText('Ham, Cheese');
    await page.getByRole('button', { name: 'Done' }).click();
    await expectInPage(page.getByRole('dialog')).toHaveCount(0);
    await expectInPage(page.getByRole('button', { name: 'Toppings (required)' })).toBeFocused();
    await expectInPage(field('Toppings')).toContainText('Ham, Cheese');
    await page.getByRole('textbox', { name: 'Code (required)' }).fill('AB12');
    const phone = page.getByRole('textbox', { name: 'Phone (required)' });
    // Not in international format: refused in the browser.
    await phone.fill('020 7946 0958');
    await page.locator('#complete-button').click();
    const phoneError = await errorOf(phone);
    await expectInPage(phoneError).toHaveText(/^Enter the number in international format/);
    await phone.fill('+44 20 7946 0958');
    await phone.blur();
    await expectInPage(phone).toHaveValue('+442079460958');

    // Uploads: a dangerous extension is refused by the server, with its message at the field.
    const attachments = field('Attachments').locator('input[type="file"]');
    await attachments.setInputFiles({
      name: 'setup.exe',
      mimeType: 'application/octet-stream',
      buffer: Buffer.from('MZ'),
    });
    await expectInPage(await errorOf(attachments)).toHaveText("File type '.exe' is not allowed.");
    await attachments.setInputFiles([
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') },
      { name: 'more.txt', mimeType: 'text/plain', buffer: Buffer.from('world') },
    ]);
    await expectInPage(field('Attachments')).toHaveText('notes.txt, more.txt');
    await field('Photo')
      .locator('input[type="file"]')
      .setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: await inkPng('Photo') });
    await field('Photo').locator('img').waitFor();

    // Initials typed (suggested from the name), signature uploaded as an image.
    await page.getByRole('button', { name: 'Initials (required)' }).click();
    await acceptConsent(page);
    await expectInPage(page.getByLabel('Type your initials')).toHaveValue('AL');
    await page.getByRole('tab', { name: 'Type' }).click();
    await page.getByRole('button', { name: 'Apply initials' }).click();
    await field('Initials').locator('img').waitFor();
    await page.getByRole('button', { name: 'Signature (required)' }).click();
    await page.getByRole('tab', { name: 'Upload' }).click();
    await page
      .locator('dialog.signature-dialog input[type="file"]')
      .setInputFiles({ name: 'sig.png', mimeType: 'image/png', buffer: await inkPng('Ada L.') });
    await page.getByRole('button', { name: 'Apply signature' }).click();
    await field('Signature').locator('img').waitFor();

    // Display-only: the stamp, the payment note, the readonly prefilled value.
    await expectInPage(field('Stamp').locator('input, button, select, textarea')).toHaveCount(0);
    await expectInPage(field('Fee')).toContainText('Payments are not configured');
    await expectInPage(page.locator('.field[data-field-name="Reference"]')).toContainText('REF-42');
    await expectInPage(page.locator('.field[data-field-name="Reference"] input')).toHaveCount(0);

    await page.locator('#complete-button').click();
    await page.getByText('Thank you! You have completed the form.').waitFor();
    const values = await savedValues(submitter.id);
    expect(values).toMatchObject({
      Name: 'Ada Lovelace',
      Age: 36,
      'Signed on': today,
      Agree: true,
      Color: 'Blue',
      Size: 'L',
      Toppings: ['Ham', 'Cheese'],
      Code: 'AB12',
      Phone: '+442079460958',
      Photo: expect.stringMatching(/^[0-9a-f-]{36}$/),
      Initials: expect.stringMatching(/^[0-9a-f-]{36}$/),
      Signature: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(values.Attachments).toHaveLength(2);
    expect(values).not.toHaveProperty('Fee');
  });

  it('a required payment field cannot be completed, and the page says why', async () => {
    const templateId = await createTemplate('Pay', [
      { name: 'Name', areas: [{ x: 60, y: 60, w: 220, h: 22, page: 1 }] },
      {
        name: 'Deposit',
        type: 'payment',
        preferences: { price: 50, currency: 'USD' },
        areas: [{ x: 60, y: 100, w: 200, h: 40, page: 1 }],
      },
    ]);
    const submitter = await createSubmission(templateId, { role: 'First Party' });
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await page.getByRole('textbox', { name: 'Name (required)' }).fill('Payer');
    await page.locator('#complete-button').click();
    await expectInPage(page.locator('.alert')).toContainText('Payments are not configured');
    expect((await api('GET', `/submitters/${submitter.id}`)).json.completed_at).toBeNull();
  });
});

describe('devices and embedding', () => {
  let templateId: number;
  beforeAll(async () => {
    templateId = await createTemplate('Device', [
      { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 170, w: 200, h: 60, page: 1 }] },
    ]);
  });

  it('a phone-sized touch screen: the page fits the width, the guided panel leads, signed with a finger', async () => {
    const submitter = await createSubmission(templateId);
    const { page } = await openBrowserPage({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
    });
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    // Nothing wider than the screen; the fields keep their place on the scaled page.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const pageBox = (await page.locator('.page').first().boundingBox())!;
    const nameBox = (await page.locator('.field[data-field-name="Name"]').boundingBox())!;
    expect(pageBox.width).toBeLessThanOrEqual(390);
    expect(nameBox.width / pageBox.width).toBeCloseTo(240 / 595, 2);
    expect((nameBox.x - pageBox.x) / pageBox.width).toBeCloseTo(60 / 595, 2);

    // The fields are filled in the panel at the bottom (test/signing-page-guide.test.ts has more).
    const guide = page.locator('.guide');
    await guide.getByRole('textbox', { name: 'Name' }).tap();
    await page.keyboard.type('Mobile Signer');
    await guide.getByRole('button', { name: 'Next' }).tap();
    await drawWithTouch(page, '.guide canvas.signature-canvas');
    await guide.getByRole('button', { name: 'Done' }).tap();
    // Applying the first signature asks for the agreement to sign electronically first.
    await acceptConsent(page);
    await page.locator('.type-signature .field-display img').waitFor();
    await page.locator('#complete-button').tap();
    await page.getByText('Thank you! You have completed the form.').waitFor();
    expect(await savedValues(submitter.id)).toMatchObject({ Name: 'Mobile Signer', Signature: expect.any(String) });
  });

  it('can be filled and signed with the keyboard alone', async () => {
    const submitter = await createSubmission(templateId, { name: 'Keyboard User' });
    const { page } = await openBrowserPage();
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    const name = page.getByRole('textbox', { name: 'Name (required)', exact: true });
    // Its name is the field's and the words it shows (WCAG 2.5.3): "Signature (required): Sign here".
    const signature = page.getByRole('button', { name: /^Signature \(required\)/ });
    await page.keyboard.press('Tab');
    await expectInPage(name).toBeFocused();
    await page.keyboard.type('Keyboard User');
    await page.keyboard.press('Tab');
    await expectInPage(signature).toBeFocused();
    await page.keyboard.press('Enter');
    // First the agreement to sign electronically: its text has the focus, then Cancel, then I agree.
    const consent = page.getByRole('dialog', { name: 'Agreement to sign electronically' });
    await expectInPage(consent.getByRole('region')).toBeFocused();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await expectInPage(consent.getByRole('button', { name: 'I agree' })).toBeFocused();
    await page.keyboard.press('Enter');
    // In the dialog: the tabs, arrow keys to "Type", the name is suggested, Enter applies.
    await expectInPage(page.getByRole('tab', { name: 'Draw', exact: true })).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await expectInPage(page.getByLabel('Type your name')).toBeFocused();
    await expectInPage(page.getByLabel('Type your name')).toHaveValue('Keyboard User');
    await page.keyboard.press('Enter');
    await page.locator('.type-signature button img').waitFor();
    await expectInPage(signature).toBeFocused();
    // Then the action bar: "Read the agreement" (the line near Complete), Start (the guided panel),
    // Decline, Complete.
    await page.keyboard.press('Tab');
    await expectInPage(page.getByRole('button', { name: 'Read the agreement' })).toBeFocused();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await expectInPage(page.getByRole('button', { name: 'Complete', exact: true })).toBeFocused();
    await page.keyboard.press('Enter');
    await page.getByText('Thank you! You have completed the form.').waitFor();
    expect(await savedValues(submitter.id)).toMatchObject({ Name: 'Keyboard User' });
  });

  it('embedded in an iframe on another origin, the form loads and completes', async () => {
    const submitter = await createSubmission(templateId, {}, { completed_redirect_url: undefined });
    const headers = (await fetch(submitter.embed_src)).headers;
    expect(headers.get('x-frame-options')).toBeNull();
    expect(headers.get('content-security-policy')).not.toMatch(/frame-ancestors/);
    const host: Server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        `<!doctype html><title>Partner site</title><h1>Partner</h1><iframe src="${submitter.embed_src}" width="900" ` +
          `height="800"></iframe>`,
      );
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const embedding = `http://localhost:${(host.address() as AddressInfo).port}`;
      expect(new URL(embedding).origin).not.toBe(new URL(t.url).origin);
      extraOrigins = [embedding];
      const { page } = await openBrowserPage();
      await page.goto(`${embedding}/`);
      const frame = page.frameLocator('iframe');
      await frame.locator('.page[data-rendered="true"]').first().waitFor();
      await frame.getByRole('textbox', { name: 'Name (required)' }).fill('Framed Signer');
      await frame.getByRole('button', { name: 'Signature (required)' }).click();
      await acceptConsent(frame);
      await frame.getByRole('tab', { name: 'Type' }).click();
      await frame.getByLabel('Type your name').fill('Framed Signer');
      await frame.getByRole('button', { name: 'Apply signature' }).click();
      await frame.locator('.type-signature button img').waitFor();
      await frame.locator('#complete-button').click();
      await frame.getByText('Thank you! You have completed the form.').waitFor();
      expect((await api('GET', `/submitters/${submitter.id}`)).json.completed_at).toMatch(/Z$/);
    } finally {
      host.close();
    }
  });

  it('after completing, goes to completed_redirect_url when it is set', async () => {
    const target = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<!doctype html><title>Thanks</title><h1>Back at the partner</h1>');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    try {
      const redirect = `http://localhost:${(target.address() as AddressInfo).port}/thanks`;
      extraOrigins = [new URL(redirect).origin];
      const submitter = await createSubmission(templateId, {}, { completed_redirect_url: redirect });
      const { page } = await openBrowserPage();
      await page.goto(submitter.embed_src);
      await waitForForm(page);
      await page.getByRole('textbox', { name: 'Name (required)' }).fill('Redirected Signer');
      await page.getByRole('button', { name: 'Signature (required)' }).click();
      await acceptConsent(page);
      await page.getByRole('tab', { name: 'Type' }).click();
      await page.getByLabel('Type your name').fill('Redirected Signer');
      await page.getByRole('button', { name: 'Apply signature' }).click();
      await page.locator('.type-signature button img').waitFor();
      await page.locator('#complete-button').click();
      await page.waitForURL(redirect);
      await page.getByRole('heading', { name: 'Back at the partner' }).waitFor();
    } finally {
      target.close();
    }
  });
});

describe('what the page loads', () => {
  let templateId: number;
  beforeAll(async () => {
    templateId = await createTemplate('Assets', [
      { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
    ]);
  });

  it('its Content-Security-Policy is enforced: an injected inline script does not run', async () => {
    const submitter = await createSubmission(templateId);
    const watched = await openBrowserPage();
    const { page } = watched;
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    // Chromium reports the refusal on the console too; that message reaches us on its own schedule.
    const refusalLogged = page.waitForEvent('console', (message) => /inline script/i.test(message.text()));
    const ran = await page.evaluate(async () => {
      const violation = new Promise<string>((resolve) =>
        document.addEventListener('securitypolicyviolation', (e) => resolve(e.violatedDirective), { once: true }),
      );
      const script = document.createElement('script');
      script.textContent = 'window.injected = true';
      document.body.append(script);
      return { directive: await violation, injected: (window as { injected?: boolean }).injected ?? false };
    });
    expect(ran).toEqual({ directive: 'script-src-elem', injected: false });
    await refusalLogged;
    // The refusal this test provoked is the only one.
    expect(watched.problems.filter((p) => !/inline script/i.test(p))).toEqual([]);
    watched.problems.length = 0;
  });

  it('the bundled service (npm start) serves the page, its script, pdf.js, the font and /js/form.js', async () => {
    const port = await freePort();
    const service = await startService(
      testServiceEnv({ databaseUrl: t.database.url, dataDir: t.config.dataDir, port }),
    );
    try {
      const submitter = await createSubmission(templateId);
      const link = `${service.url}/s/${submitter.slug}`;
      extraOrigins = [new URL(service.url).origin];
      const { page } = await openBrowserPage();
      const assets: string[] = [];
      page.on('response', (response) => {
        if (response.url().includes('/s-assets/'))
          assets.push(`${response.status()} ${new URL(response.url()).pathname}`);
      });
      await page.goto(link);
      await waitForForm(page);
      await page.getByRole('textbox', { name: 'Name (required)' }).waitFor();
      // Responses are reported as they come (pdf.js's worker from its own thread).
      await expect
        .poll(() => assets, { timeout: PAGE_TIMEOUT_MS })
        .toEqual(
          expect.arrayContaining([
            '200 /s-assets/form.css',
            '200 /s-assets/form.js',
            expect.stringMatching(/^200 \/s-assets\/pdfjs-[\d.]+\/build\/pdf\.min\.mjs$/),
            expect.stringMatching(/^200 \/s-assets\/pdfjs-[\d.]+\/build\/pdf\.worker\.min\.mjs$/),
          ]),
        );
      const font = await fetch(`${service.url}/s-assets/fonts/dancing-script-latin-400-normal.woff2`);
      expect(font.status).toBe(200);
      expect(font.headers.get('content-type')).toBe('font/woff2');
      expect((await fetch(`${service.url}/s-assets/fonts/..%2f..%2fpackage.json`)).status).toBe(404);
      expect((await fetch(`${service.url}/s-assets/pdfjs-0/build/pdf.min.mjs`)).status).toBe(404);
      // The embedded form's script (docs/embedding.md) is bundled by the running service too.
      const embedScript = await fetch(`${service.url}/js/form.js`);
      expect(embedScript.status).toBe(200);
      expect(await embedScript.text()).toContain('customElements');
    } finally {
      await service.stop();
    }
  }, 120_000);
});
