/**
 * The signer's page in every language Signet speaks (issue 24 §2, "the form … render[s] in every
 * language, RTL for he and ar"), in Debian's Chromium (playwright-core) against a real service:
 * for each of the 22 languages, opened with `?lang=` (the embed's data-language), the page is
 * written in it (`<html lang dir>`, the action bar's Complete and Decline and the guided panel's
 * Next as that language's message file says, no English left in the bar) and fits a 390×844 phone
 * without sideways scrolling. Web-first assertions (test/helpers/browser.ts).
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { directionOf, LANGUAGE_CODES } from '../src/i18n/languages.ts';
import { CATALOGS } from '../src/i18n/messages.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

vi.setConfig({ testTimeout: 180_000 });

let t: TestApp;
let alice: CreatedAccount;
let browser: Browser;
let embedSrc: string;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Babel Ltd', email: 'alice@languages-page.test' });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  const template = await rest(t.url, alice.apiKey, 'POST', '/templates/pdf', {
    name: 'Lease',
    documents: [{ name: 'lease', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [
      { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 100, w: 240, h: 24, page: 1 }] },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 160, w: 200, h: 50, page: 1 }] },
    ],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  const created = await rest(t.url, alice.apiKey, 'POST', '/submissions', {
    template_id: template.json.id,
    send_email: false,
    submitters: [{ role: 'Signer', email: 'polyglot@languages-page.test' }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  embedSrc = created.json[0].embed_src;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** A message of the `form` namespace, `group.key`, in a language. */
const message = (code: (typeof LANGUAGE_CODES)[number], group: string, key: string): string =>
  (CATALOGS[code].form[group] as Record<string, string>)[key]!;

describe('the signing page in every language', () => {
  it('is written in each of the 22 languages, right to left for he and ar, and fits a phone', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    try {
      for (const code of LANGUAGE_CODES) {
        await page.goto(`${embedSrc}?lang=${code}`);
        const html = page.locator('html');
        await expectInPage(html).toHaveAttribute('lang', code);
        await expectInPage(html).toHaveAttribute('dir', directionOf(code));
        const complete = page.locator('#complete-button');
        await expectInPage(complete).toHaveText(message(code, 'complete', 'button'));
        await expectInPage(page.locator('#decline-button')).toHaveText(message(code, 'decline', 'button'));
        // On a phone the guided panel leads, in the same language.
        await expectInPage(
          page.locator('.guide').getByRole('button', { name: message(code, 'guide', 'next') }),
        ).toBeVisible();
        if (code !== 'en') {
          await expectInPage(page.locator('.action-bar')).not.toContainText('Complete');
          await expectInPage(page.locator('.action-bar')).not.toContainText('Decline');
        }
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, `${code}: sideways scrolling`).toBeLessThanOrEqual(0);
      }
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
