/**
 * The consent dialog of the signing page (issue 24 §4; src/signing-form/page/consent.ts), in
 * Chromium at 1280×800 and 390×844: the line near Complete; the dialog before the first signature
 * (Escape cancels it, nothing recorded, focus back on the field) and, on a form without one, before
 * Complete (on a phone after the guided panel's Done; Cancel gives the focus back to Complete);
 * "I agree" records the acceptance (IP, the browser's user agent) and the signer goes on to sign
 * and complete; the whole text readable on a phone (≥ 16 px, ≥ 44 px buttons, no
 * sideways scrolling); axe-core finds no violation in the dialog at either size. Screenshots of
 * the dialog are written to SCREENSHOT_DIR when it is set.
 */
import fs from 'node:fs';
import path from 'node:path';
import axe from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

vi.setConfig({ testTimeout: 90_000 });

let t: TestApp;
let alice: CreatedAccount;
let browser: Browser;
let signatureTemplate: number;
let textOnlyTemplate: number;

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

async function createTemplate(fields: unknown[]): Promise<number> {
  const { status, json } = await rest(t.url, alice.apiKey, 'POST', '/templates/pdf', {
    name: 'Tenancy',
    documents: [{ name: 'tenancy', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields,
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json.id;
}

async function createSubmission(templateId: number, language?: string) {
  const { status, json } = await rest(t.url, alice.apiKey, 'POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [
      {
        role: 'Signer',
        email: `tess-${Date.now()}@consent.test`,
        name: 'Tess Tenant',
        ...(language ? { language } : {}),
      },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0] as { id: number; embed_src: string };
}

async function openPage(viewport: { width: number; height: number }, url: string): Promise<Page> {
  const context = await browser.newContext({
    viewport,
    ...(viewport.width < 600 ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  await page.goto(url);
  await page.locator('.action-bar').waitFor();
  await page.locator('.page[data-rendered="true"]').first().waitFor();
  return page;
}

/** axe-core's violations in the open consent dialog (WCAG 2.0–2.2 A and AA, and best practice). */
async function axeViolations(page: Page): Promise<{ id: string; nodes: number }[]> {
  // Through the DevTools protocol: the page's CSP allows no inline script, and needs none.
  await page.evaluate(axe.source);
  const result = await page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe.run(
      { include: [['dialog.consent-dialog']] },
      {
        runOnly: {
          type: 'tag',
          values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'],
        },
      },
    ),
  );
  return result.violations.map((v) => ({ id: v.id, nodes: v.nodes.length }));
}

async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.SCREENSHOT_DIR;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, name) });
}

const consentEvents = (submitterId: number) =>
  t.db.submissionEvent.findMany({ where: { submitterId, eventType: 'consent_accepted' } });

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Acme Lettings', email: 'alice@consent-page.test' });
  signatureTemplate = await createTemplate([
    { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 200, h: 24, page: 1 }] },
    { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 200, w: 200, h: 60, page: 1 }] },
  ]);
  textOnlyTemplate = await createTemplate([
    { name: 'Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 200, h: 24, page: 1 }] },
  ]);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the consent dialog', () => {
  it('1280×800: asked before the first signature; Escape cancels; "I agree" records it; completes', async () => {
    const signer = await createSubmission(signatureTemplate);
    const page = await openPage(DESKTOP, signer.embed_src);
    await expectInPage(page.locator('.consent-notice')).toContainText(
      'By completing, you agree to sign electronically.',
    );

    const signature = page.getByRole('button', { name: 'Signature (required)' });
    await signature.click();
    const dialog = page.getByRole('dialog', { name: 'Agreement to sign electronically' });
    await expectInPage(dialog).toBeVisible();
    await expectInPage(dialog).toContainText('Acme Lettings asks you to sign these documents electronically.');
    await expectInPage(dialog).toContainText('paper copy');
    await expectInPage(dialog.getByRole('region', { name: 'Agreement to sign electronically' })).toBeFocused();
    await expectInPage(dialog.locator('.consent-text p')).toHaveCount(5);
    await screenshot(page, 'consent-dialog-1280x800.png');
    expect(await axeViolations(page)).toEqual([]);

    // Escape: no agreement, no signature dialog, focus back on the field.
    await page.keyboard.press('Escape');
    await expectInPage(dialog).toBeHidden();
    await expectInPage(page.locator('dialog.signature-dialog')).toHaveCount(0);
    await expectInPage(signature).toBeFocused();
    expect(await consentEvents(signer.id)).toEqual([]);

    // Agreed: the signature dialog follows at once.
    await signature.click();
    await acceptConsent(page);
    const signatureDialog = page.locator('dialog.signature-dialog');
    await signatureDialog.getByRole('tab', { name: 'Type' }).click();
    await signatureDialog.getByLabel('Type your name').fill('Tess Tenant');
    await signatureDialog.getByRole('button', { name: 'Apply signature' }).click();
    await page.locator('.type-signature button img').waitFor();
    await expectInPage(page.locator('.consent-notice')).toContainText('You agreed to sign electronically.');
    const [event] = await consentEvents(signer.id);
    expect(event?.data).toMatchObject({
      ip: '127.0.0.1',
      ua: expect.stringContaining('Chrome/'),
      version: expect.stringMatching(/^default-en-[0-9a-f]{12}$/),
      language: 'en',
    });

    // Read again after agreeing: the text and one Close button; focus back on the button.
    const read = page.getByRole('button', { name: 'Read the agreement' });
    await read.click();
    await expectInPage(dialog.getByRole('button')).toHaveCount(1);
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expectInPage(dialog).toBeHidden();
    await expectInPage(read).toBeFocused();

    await page.getByRole('textbox', { name: 'Name (required)' }).fill('Tess Tenant');
    await page.locator('#complete-button').click();
    await page.getByText('Thank you! You have completed the form.').waitFor();
    expect(await consentEvents(signer.id)).toHaveLength(1);
    await page.context().close();
  });

  it('390×844: asked before Complete on a form without a signature; readable without zoom', async () => {
    const signer = await createSubmission(textOnlyTemplate);
    const page = await openPage(PHONE, signer.embed_src);
    // On a phone the guided panel leads: the name, Done, then Complete.
    const guide = page.locator('.guide');
    await guide.getByRole('textbox', { name: 'Name' }).fill('Tess Tenant');
    await guide.getByRole('button', { name: 'Done' }).tap();
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await page.locator('#complete-button').tap();
    const dialog = page.getByRole('dialog', { name: 'Agreement to sign electronically' });
    await expectInPage(dialog).toBeVisible();
    await screenshot(page, 'consent-dialog-390x844.png');
    expect(await axeViolations(page)).toEqual([]);

    const measured = await page.evaluate(() => {
      // Each button is what a tap at its centre reaches: nothing (the guided panel) lies over the dialog.
      const reachable = [...document.querySelectorAll('dialog.consent-dialog button')].every((b) => {
        const box = b.getBoundingClientRect();
        return b.contains(document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2));
      });
      const dialogBox = document.querySelector('dialog.consent-dialog')!.getBoundingClientRect();
      const text = document.querySelector('.consent-text p')!;
      const buttons = [...document.querySelectorAll('dialog.consent-dialog button')].map((b) => {
        const box = b.getBoundingClientRect();
        return { height: box.height, bottom: box.bottom };
      });
      return {
        left: dialogBox.left,
        right: dialogBox.right,
        fontSize: Number.parseFloat(getComputedStyle(text).fontSize),
        buttons,
        scrollWidth: document.documentElement.scrollWidth,
        reachable,
      };
    });
    expect(measured.left).toBeGreaterThanOrEqual(0);
    expect(measured.right).toBeLessThanOrEqual(PHONE.width);
    expect(measured.fontSize).toBeGreaterThanOrEqual(16);
    for (const button of measured.buttons) {
      expect(button.height).toBeGreaterThanOrEqual(44);
      // Both buttons in view without scrolling the page.
      expect(button.bottom).toBeLessThanOrEqual(PHONE.height);
    }
    expect(measured.scrollWidth).toBeLessThanOrEqual(PHONE.width);
    expect(measured.reachable).toBe(true);

    // Cancel: nothing recorded, nothing completed, focus back on Complete (WCAG 2.4.3).
    await dialog.getByRole('button', { name: 'Cancel' }).tap();
    await expectInPage(dialog).toBeHidden();
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await expectInPage(page.locator('#complete-button')).toBeEnabled();
    expect(await consentEvents(signer.id)).toEqual([]);

    await page.locator('#complete-button').tap();
    await dialog.getByRole('button', { name: 'I agree' }).tap();
    await page.getByText('Thank you! You have completed the form.').waitFor();
    expect(await consentEvents(signer.id)).toHaveLength(1);
    await page.context().close();
  });

  it('Arabic, 390×844: the disclosure in Arabic, laid out right to left; agreeing completes', async () => {
    const signer = await createSubmission(textOnlyTemplate, 'ar');
    const page = await openPage(PHONE, signer.embed_src);
    // On a phone the guided panel leads: the name, Done (its last step's Next), then Complete.
    await page.locator('.guide input.guide-input').fill('تيس');
    await page.locator('.guide .guide-next').tap();
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await page.locator('#complete-button').tap();
    const dialog = page.getByRole('dialog', { name: 'الموافقة على التوقيع الإلكتروني' });
    await expectInPage(dialog).toBeVisible();
    await expectInPage(dialog).toContainText('يطلب منك Acme Lettings توقيع هذه المستندات إلكترونيًا.');
    expect(await dialog.evaluate((element) => getComputedStyle(element).direction)).toBe('rtl');
    await screenshot(page, 'consent-dialog-ar-390x844.png');
    expect(await axeViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'أوافق' }).tap();
    await expectInPage(dialog).toBeHidden();
    await expectInPage(page.locator('#complete-button')).toHaveCount(0);
    const [event] = await consentEvents(signer.id);
    expect(event?.data).toMatchObject({ language: 'ar', version: expect.stringMatching(/^default-ar-/) });
    await page.context().close();
  });
});
