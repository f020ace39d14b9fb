/**
 * Two of the signer's pages as a signer sees them (issue 24: what the screenshots showed), in
 * Debian's Chromium (playwright-core) against a real service:
 * - a shared template's link (`/d/{slug}`, src/signing-form/page/template-link.ts) at 1280×800 and
 *   390×844: Email and Name labelled above their inputs, inputs ≥ 44 px tall (WCAG 2.5.5's 44 px,
 *   as the form's) with ≥ 16 px text, as wide as the form (the card's width on a phone);
 * - an expired form: DocuSeal's "Form has been expired." and what the signer can do next.
 * Web-first assertions (test/helpers/browser.ts).
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

vi.setConfig({ testTimeout: 90_000 });

let t: TestApp;
let alice: CreatedAccount;
let browser: Browser;
let template: { id: number; slug: string };

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Start Ltd', email: 'alice@start-page.test' });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  const created = await api('POST', '/templates/pdf', {
    name: 'Shared form',
    documents: [{ name: 'Shared form', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [{ name: 'Name', role: 'Signer', areas: [{ x: 60, y: 100, w: 240, h: 24, page: 1 }] }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  template = created.json;
  await t.db.template.update({ where: { id: template.id }, data: { sharedLink: true } });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the template link’s start', () => {
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    it(`labels above readable, full-width inputs at ${viewport.width}×${viewport.height}`, async () => {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      page.setDefaultTimeout(PAGE_TIMEOUT_MS);
      try {
        await page.goto(`${t.url}/d/${template.slug}`);
        const email = page.getByRole('textbox', { name: 'Email' });
        const name = page.getByRole('textbox', { name: /^Name/ });
        await expectInPage(email).toBeVisible();
        await expectInPage(name).toBeVisible();
        const form = (await page.locator('.start-form').boundingBox())!;
        for (const [input, label] of [
          [email, page.locator('.start-form label').nth(0)],
          [name, page.locator('.start-form label').nth(1)],
        ] as const) {
          const box = (await input.boundingBox())!;
          const labelBox = (await label.boundingBox())!;
          expect(box.height, 'target height').toBeGreaterThanOrEqual(44);
          expect(box.width, 'as wide as the form').toBeGreaterThanOrEqual(form.width - 1);
          expect(labelBox.y + labelBox.height, 'label above its input').toBeLessThanOrEqual(box.y + 1);
          const fontSize = await input.evaluate((element) => Number.parseFloat(getComputedStyle(element).fontSize));
          expect(fontSize, 'text size').toBeGreaterThanOrEqual(16);
        }
        // On a phone the form takes the card's width (a margin of the page at most on each side).
        if (viewport.width < 640) expect(form.width).toBeGreaterThanOrEqual(viewport.width - 80);
      } finally {
        await context.close();
      }
    });
  }
});

describe('an expired form', () => {
  it('keeps DocuSeal’s sentence and says what the signer can do', async () => {
    const created = await api('POST', '/submissions', {
      template_id: template.id,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'late@start-page.test' }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const submitter = created.json[0] as { embed_src: string; submission_id: number };
    await t.db.submission.update({
      where: { id: submitter.submission_id },
      data: { expireAt: new Date(Date.now() - 60_000) },
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    try {
      await page.goto(submitter.embed_src);
      await expectInPage(page.getByRole('heading', { name: 'Form has been expired.' })).toBeVisible();
      await expectInPage(page.locator('.state p')).toHaveText('Ask the sender for a new link.');
    } finally {
      await context.close();
    }
  });
});
