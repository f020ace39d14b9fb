/**
 * Completing the signer's page in Chromium (issue 24 §1, §3):
 * - the Complete race: a signer who types, draws, applies the signature and clicks Complete at
 *   once is never refused what they just gave (20 signers in a row, every one completes);
 * - after a failed Complete the summary follows the fields as they are fixed, focus goes to the
 *   first field that needs attention; after completion focus is on the result's heading.
 * Web-first assertions only (test/helpers/browser.ts).
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent } from './helpers/browser.ts';
import {
  apiOf,
  closeWatched,
  createSubmission,
  createTemplate,
  drawWithMouse,
  openWatchedPage,
  waitForForm,
  type Api,
} from './helpers/signing-page.ts';

vi.setConfig({ testTimeout: 150_000 });

let t: TestApp;
let alice: CreatedAccount;
let api: Api;
let browser: Browser;
let templateId: number;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Lease Co', email: 'alice@signing-complete.test' });
  api = apiOf(t.url, alice.apiKey);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  templateId = await createTemplate(api, 'Lease', [
    { name: 'Full Name', role: 'Tenant', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
    { name: 'Tenant Signature', type: 'signature', role: 'Tenant', areas: [{ x: 60, y: 170, w: 200, h: 60, page: 1 }] },
  ]);
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('Complete right after the signature is applied', () => {
  it('completes every time: 20 signers click Complete the moment the signature is applied', async () => {
    const refused: string[] = [];
    // One tab, a new signer's link each time (as 20 signers on one computer).
    const watched = await openWatchedPage(browser, { viewport: { width: 1280, height: 800 } });
    const { page } = watched;
    for (let i = 0; i < 20; i++) {
      const submitter = await createSubmission(api, templateId, { role: 'Tenant' });
      await page.goto(submitter.embed_src);
      await waitForForm(page);
      await page.getByRole('textbox', { name: 'Full Name' }).fill(`Tenant ${i}`);
      await page.locator('.type-signature button').click();
      // Each is a new signer: the agreement to sign electronically before their first signature.
      await acceptConsent(page);
      await drawWithMouse(page, 'dialog.signature-dialog canvas.signature-canvas');
      await page.getByRole('button', { name: 'Apply signature' }).click();
      await page.locator('#complete-button').click();
      const outcome = await Promise.race([
        page
          .getByText('Thank you! You have completed the form.')
          .waitFor()
          .then(() => 'completed'),
        page
          .locator('.alert:not([hidden]), .field-error:not([hidden])')
          .first()
          .waitFor()
          .then(async () => `refused: ${await page.locator('.alert, .field-error:not([hidden])').allTextContents()}`),
      ]);
      if (outcome !== 'completed') refused.push(`${i}: ${outcome}`);
      const row = await t.db.submitter.findUniqueOrThrow({ where: { id: submitter.id } });
      if (!row.completedAt && outcome === 'completed') refused.push(`${i}: not completed in the database`);
    }
    await closeWatched(watched, t.url);
    expect(refused, 'signers refused right after applying their signature').toEqual([]);
  }, 300_000);
});
