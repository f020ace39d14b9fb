/**
 * The signer's page fetches the pattern checker (re2js, ~46 KB of gzipped JS) only for a form with
 * a `validation.pattern` (issue 24 §6; src/signing-form/page/values.ts, page-routes.ts bundlePage's
 * code splitting), in Debian's Chromium (playwright-core) against a real service, watching the
 * page's requests: a form without patterns completes without requesting /s-assets/chunks/; a form
 * with one requests its chunk (same origin, immutable) as it opens, refuses a value the pattern
 * does not match, and completes with one it does. Web-first assertions (test/helpers/browser.ts).
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

vi.setConfig({ testTimeout: 90_000 });

let t: TestApp;
let alice: CreatedAccount;
let browser: Browser;

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const area = (y: number) => [{ x: 60, y, w: 240, h: 24, page: 1 }];
const CHUNK = /\/s-assets\/chunks\/field-pattern-[\w-]+\.js$/;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Chunks Ltd', email: 'alice@chunks.test' });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** A one-signer submission of a template with these fields; its signing link. */
async function formWith(fields: Record<string, unknown>[]): Promise<string> {
  const created = await api('POST', '/templates/pdf', {
    name: 'Chunk form',
    documents: [{ name: 'Chunk form', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields,
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  const submission = await api('POST', '/submissions', {
    template_id: created.json.id,
    send_email: false,
    submitters: [{ role: 'Signer', email: 'signer@chunks.test' }],
  });
  expect(submission.status, JSON.stringify(submission.json)).toBe(200);
  return (submission.json[0] as { embed_src: string }).embed_src;
}

/** A new page recording every URL it requests and every page error. */
async function openPage(): Promise<{ page: Page; requests: string[]; problems: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
  });
  return { page, requests, problems };
}

describe('the pattern checker is fetched only by forms with a pattern', () => {
  it('a form without patterns completes without requesting the chunk', async () => {
    const url = await formWith([{ name: 'Name', role: 'Signer', areas: area(100) }]);
    const { page, requests, problems } = await openPage();
    try {
      await page.goto(url);
      await page.locator('.page[data-rendered="true"]').first().waitFor();
      await page.getByRole('textbox', { name: 'Name (required)' }).fill('Ada Lovelace');
      await page.locator('#complete-button').click();
      await acceptConsent(page);
      await page.getByText('Thank you! You have completed the form.').waitFor();
      await page.waitForLoadState('networkidle');
      expect(requests.filter((u) => u.includes('/s-assets/chunks/'))).toEqual([]);
      expect(
        requests.some((u) => u.endsWith('/s-assets/form.js')),
        'the page script was loaded',
      ).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await page.context().close();
    }
  });

  it('a form with a pattern requests the chunk as it opens, and the page checks the pattern', async () => {
    const url = await formWith([
      { name: 'Name', role: 'Signer', required: false, areas: area(100) },
      {
        name: 'ZIP',
        role: 'Signer',
        validation: { pattern: '[0-9]{5}', message: 'Enter the 5-digit ZIP code' },
        areas: area(140),
      },
    ]);
    const { page, requests, problems } = await openPage();
    try {
      const chunk = page.waitForResponse((response) => CHUNK.test(response.url()));
      await page.goto(url);
      // Fetched when the form is shown, before any check needs it.
      const response = await chunk;
      expect(response.status()).toBe(200);
      expect(new URL(response.url()).origin).toBe(new URL(t.url).origin);
      expect(response.headers()['content-type']).toMatch(/^text\/javascript/);
      expect(response.headers()['cache-control']).toContain('immutable');

      const zip = page.getByRole('textbox', { name: 'ZIP (required)' });
      await zip.fill('12a45');
      await page.locator('#complete-button').click();
      await expectInPage(page.locator('.alert')).toHaveText('Enter the 5-digit ZIP code');
      await expectInPage(zip).toHaveAttribute('aria-invalid', 'true');
      await zip.fill('12345');
      await expectInPage(zip).not.toHaveAttribute('aria-invalid', 'true');
      await page.locator('#complete-button').click();
      await acceptConsent(page);
      await page.getByText('Thank you! You have completed the form.').waitFor();
      expect(requests.filter((u) => CHUNK.test(u))).toHaveLength(1);
      expect(problems).toEqual([]);
    } finally {
      await page.context().close();
    }
  });

  it('an unknown chunk is a 404', async () => {
    const response = await fetch(`${t.url}/s-assets/chunks/field-pattern-NOPE.js`);
    expect(response.status).toBe(404);
  });
});
