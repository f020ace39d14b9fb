/**
 * The signer's page against WCAG 2.2 AA in Chromium (issue 24 §3), with axe-core run inside the
 * page (test/helpers/signing-page.ts axeViolations): no violation in any state — open, each
 * dialog (signature draw/type/upload, decline), the errors after a refused Complete, completed,
 * declined, archived, expired, embedded in an iframe, right to left (Arabic) — at 1280×800 and on
 * a 390×844 phone; the page reflows at 320 px and at 200% zoom (640×400 CSS px) without
 * horizontal scrolling; after a refused Complete the summary follows the fields as they are
 * fixed and focus is on the first field to fix; after completion focus is on the result's
 * heading; every field type can be completed with the keyboard alone.
 */
import fs from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, acceptConsentWithKeyboard, expectInPage } from './helpers/browser.ts';
import {
  apiOf,
  axeViolations,
  closeWatched,
  createSubmission,
  createTemplate,
  drawWithMouse,
  drawWithTouch,
  openWatchedPage,
  waitForForm,
  type Api,
  type Watched,
} from './helpers/signing-page.ts';

vi.setConfig({ testTimeout: 120_000 });

let t: TestApp;
let alice: CreatedAccount;
let api: Api;
let browser: Browser;
let templateId: number;
let everyTypeId: number;
const opened: Watched[] = [];
let extraOrigins: string[] = [];
const shots = process.env.SIGNET_SCREENSHOTS;

const DESKTOP = { viewport: { width: 1280, height: 800 } };
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

async function open(options = {}): Promise<Page> {
  const watched = await openWatchedPage(browser, options);
  opened.push(watched);
  return watched.page;
}

/** axe finds nothing; a screenshot of the state goes to $SIGNET_SCREENSHOTS when it is set. */
async function expectAccessible(target: Page | Frame, state: string): Promise<void> {
  const violations = await axeViolations(target);
  expect(violations, `axe violations: ${state}`).toEqual([]);
  if (shots && 'screenshot' in target) {
    fs.mkdirSync(shots, { recursive: true });
    await target.screenshot({ path: `${shots}/${state}.png` });
  }
}

/** Nothing on the page is wider than the window: no horizontal scrolling (WCAG 1.4.10 Reflow). */
async function expectReflow(page: Page): Promise<void> {
  const widths = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    window: window.innerWidth,
    outside: [...document.querySelectorAll('button, input, select, textarea, a')]
      .filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && (r.right > window.innerWidth + 1 || r.left < -1);
      })
      .map((e) => e.outerHTML.slice(0, 80)),
  }));
  expect(widths.outside, 'controls outside the window').toEqual([]);
  expect(widths.scroll).toBeLessThanOrEqual(widths.window);
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Access Ltd', email: 'alice@signing-a11y.test' });
  api = apiOf(t.url, alice.apiKey);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  templateId = await createTemplate(api, 'Lease', [
    { name: 'Full Name', role: 'Tenant', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
    { name: 'Email', role: 'Tenant', areas: [{ x: 320, y: 120, w: 200, h: 24, page: 1 }] },
    { name: 'Tenant Signature', type: 'signature', role: 'Tenant', areas: [{ x: 60, y: 170, w: 200, h: 60, page: 1 }] },
  ]);
  everyTypeId = await createTemplate(api, 'Everything', [
    { name: 'Full Name', role: 'Tenant', areas: [{ x: 60, y: 100, w: 240, h: 24, page: 1 }] },
    { name: 'Start Date', type: 'date', role: 'Tenant', areas: [{ x: 320, y: 100, w: 140, h: 24, page: 1 }] },
    { name: 'Rooms', type: 'number', role: 'Tenant', areas: [{ x: 60, y: 140, w: 80, h: 24, page: 1 }] },
    { name: 'Pets', type: 'checkbox', role: 'Tenant', areas: [{ x: 160, y: 140, w: 24, h: 24, page: 1 }] },
    {
      name: 'Plan',
      type: 'select',
      role: 'Tenant',
      options: ['Basic', 'Premium'],
      areas: [{ x: 200, y: 140, w: 120, h: 24, page: 1 }],
    },
    {
      name: 'Floor',
      type: 'radio',
      role: 'Tenant',
      options: ['Ground', 'Upper'],
      areas: [{ x: 340, y: 140, w: 120, h: 24, page: 1 }],
    },
    { name: 'Signature', type: 'signature', role: 'Tenant', areas: [{ x: 60, y: 200, w: 200, h: 60, page: 1 }] },
    { name: 'Initials', type: 'initials', role: 'Tenant', areas: [{ x: 300, y: 200, w: 80, h: 40, page: 1 }] },
    { name: 'Photo', type: 'image', role: 'Tenant', areas: [{ x: 60, y: 280, w: 120, h: 60, page: 1 }] },
    { name: 'Payslip', type: 'file', role: 'Tenant', areas: [{ x: 200, y: 280, w: 200, h: 30, page: 1 }] },
  ]);
});

afterEach(async () => {
  for (const watched of opened.splice(0)) await closeWatched(watched, t.url, extraOrigins);
  extraOrigins = [];
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('axe finds no violation', () => {
  it('on a desktop: open, each dialog, errors after a refused Complete, completed', async () => {
    const submitter = await createSubmission(api, templateId, { role: 'Tenant', name: 'Ann Access' });
    const page = await open(DESKTOP);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await expectAccessible(page, 'desktop-open');

    // The first signature: the agreement to sign electronically comes first.
    await page.getByRole('button', { name: /Tenant Signature/ }).click();
    await page.getByRole('dialog', { name: 'Agreement to sign electronically' }).waitFor();
    await expectAccessible(page, 'desktop-consent');
    await acceptConsent(page);
    const dialog = page.locator('dialog.signature-dialog');
    await dialog.waitFor();
    await expectAccessible(page, 'desktop-signature-draw');
    await dialog.getByRole('tab', { name: 'Type' }).click();
    await expectInPage(dialog.getByLabel('Type your name')).toBeFocused();
    await expectAccessible(page, 'desktop-signature-type');
    await dialog.getByRole('tab', { name: 'Upload' }).click();
    await expectAccessible(page, 'desktop-signature-upload');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expectInPage(dialog).toHaveCount(0);

    await page.getByRole('button', { name: 'Decline' }).click();
    await page.locator('dialog.decline-dialog').waitFor();
    await expectAccessible(page, 'desktop-decline');
    await page.locator('dialog.decline-dialog').getByRole('button', { name: 'Cancel' }).click();

    // A refused Complete: the summary, focus on the first field to fix, the summary follows.
    await page.locator('#complete-button').click();
    const alert = page.locator('.alert');
    await expectInPage(alert).toHaveText('3 fields need your attention. Full Name is required');
    const name = page.getByRole('textbox', { name: 'Full Name' });
    await expectInPage(name).toBeFocused();
    await expectAccessible(page, 'desktop-errors');
    await name.fill('Ann Access');
    await expectInPage(alert).toHaveText('2 fields need your attention. Email is required');
    await page.getByRole('textbox', { name: 'Email' }).fill('ann@example.test');
    await expectInPage(alert).toHaveText('Tenant Signature is required');
    await page.getByRole('button', { name: /Tenant Signature/ }).click();
    await drawWithMouse(page, 'dialog.signature-dialog canvas.signature-canvas');
    await page.getByRole('button', { name: 'Apply signature' }).click();
    await expectInPage(alert).toBeHidden();
    await expectInPage(page.locator('.progress')).toHaveText('3 of 3 required fields filled');
    // Saving is said in a polite live region.
    await expectInPage(page.locator('.status')).toHaveAttribute('role', 'status');
    await expectInPage(page.locator('.status')).toHaveText('All changes saved.');

    await page.locator('#complete-button').click();
    const heading = page.getByRole('heading', { name: 'Thank you! You have completed the form.' });
    await expectInPage(heading).toBeFocused();
    await expectAccessible(page, 'desktop-completed');
  });

  it('on a phone: the guided panel open, its signature step, errors after a refused Complete', async () => {
    const submitter = await createSubmission(api, templateId, { role: 'Tenant' });
    const page = await open(PHONE);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await expectInPage(page.locator('.guide')).toBeVisible();
    await expectAccessible(page, 'phone-open');
    await page.locator('#complete-button').tap();
    await expectInPage(page.locator('.alert')).toHaveText('3 fields need your attention. Full Name is required');
    // The panel shows the first field to fix, its input focused, its message beside it.
    await expectInPage(page.locator('.guide .guide-count')).toHaveText('1 of 3');
    await expectInPage(page.locator('.guide').getByRole('textbox', { name: 'Full Name' })).toBeFocused();
    await expectInPage(page.locator('.guide-error')).toHaveText('Full Name is required');
    await expectAccessible(page, 'phone-errors');
    await page.keyboard.type('Phone Person');
    await expectInPage(page.locator('.alert')).toHaveText('2 fields need your attention. Email is required');
    await page.locator('.guide').getByRole('button', { name: 'Next' }).tap();
    await page.keyboard.type('phone@example.test');
    await page.locator('.guide').getByRole('button', { name: 'Next' }).tap();
    await expectInPage(page.locator('.guide canvas.signature-canvas')).toBeVisible();
    await expectAccessible(page, 'phone-signature');
    // Done applies the drawn signature: the agreement to sign electronically comes first, over
    // the panel; after it the panel goes on to Complete.
    await drawWithTouch(page, '.guide canvas.signature-canvas');
    await page.locator('.guide').getByRole('button', { name: 'Done' }).tap();
    await page.getByRole('dialog', { name: 'Agreement to sign electronically' }).waitFor();
    await expectAccessible(page, 'phone-consent');
    await acceptConsent(page);
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await expectInPage(page.locator('.alert')).toBeHidden();
    await page.locator('#decline-button').tap();
    await page.locator('dialog.decline-dialog').waitFor();
    await expectAccessible(page, 'phone-decline');
    await page.getByLabel('Reason').fill('Wrong address');
    await page.locator('dialog.decline-dialog').getByRole('button', { name: 'Decline' }).tap();
    const heading = page.getByRole('heading', { name: 'Form has been declined.' });
    await expectInPage(heading).toBeFocused();
    await expectAccessible(page, 'phone-declined');
  });

  it('archived and expired forms, in Arabic (right to left) too', async () => {
    const archived = await createSubmission(api, templateId, { role: 'Tenant' });
    expect((await api('DELETE', `/submissions/${archived.submission_id}`)).status).toBe(200);
    const expired = await createSubmission(api, templateId, { role: 'Tenant' });
    await t.db.submission.update({
      where: { id: expired.submission_id },
      data: { expireAt: new Date(Date.now() - 1000) },
    });
    const page = await open(DESKTOP);
    await page.goto(archived.embed_src);
    await page.getByRole('heading', { name: 'Form has been archived.' }).waitFor();
    await expectAccessible(page, 'desktop-archived');
    await page.goto(expired.embed_src);
    await page.getByRole('heading', { name: 'Form has been expired.' }).waitFor();
    await expectAccessible(page, 'desktop-expired');

    const open2 = await createSubmission(api, templateId, { role: 'Tenant' });
    const phone = await open(PHONE);
    await phone.goto(`${open2.embed_src}?lang=ar`);
    await waitForForm(phone);
    await expectInPage(phone.locator('html')).toHaveAttribute('dir', 'rtl');
    await expectAccessible(phone, 'phone-rtl');
    await expectReflow(phone);
  });

  it('embedded in an iframe on another origin', async () => {
    const submitter = await createSubmission(api, templateId, { role: 'Tenant' });
    const host = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        `<!doctype html><html lang="en"><title>Partner</title><main><h1>Partner</h1>` +
          `<iframe title="Sign the lease" src="${submitter.embed_src}" width="900" height="700"></iframe>` +
          `</main></html>`,
      );
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const embedding = `http://localhost:${(host.address() as AddressInfo).port}`;
      extraOrigins = [embedding];
      const page = await open(DESKTOP);
      await page.goto(`${embedding}/`);
      const frame = page.frames().find((f) => f !== page.mainFrame())!;
      await waitForForm(frame);
      await expectAccessible(frame, 'embedded');
    } finally {
      host.close();
    }
  });
});

describe('reflow and zoom', () => {
  it('fits 320 px and 200% zoom (640×400) without horizontal scrolling', async () => {
    const submitter = await createSubmission(api, templateId, { role: 'Tenant' });
    for (const viewport of [
      { width: 320, height: 640 },
      { width: 640, height: 400 },
    ]) {
      const page = await open({ viewport });
      await page.goto(submitter.embed_src);
      await waitForForm(page);
      await expectReflow(page);
      await page.locator('#complete-button').click();
      await expectInPage(page.locator('.alert')).toBeVisible();
      await expectReflow(page);
      await expectAccessible(page, `reflow-${viewport.width}`);
    }
  });
});

describe('keyboard only', () => {
  it('completes text, date, number, checkbox, select, radio, signature, initials, image and file fields', async () => {
    const submitter = await createSubmission(api, everyTypeId, { role: 'Tenant', name: 'Kay Board' });
    const page = await open(DESKTOP);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    const focused = (name: string | RegExp) => expectInPage(page.getByLabel(name).first()).toBeFocused();
    const tab = () => page.keyboard.press('Tab');

    await tab();
    await focused('Full Name (required)');
    await page.keyboard.type('Kay Board');
    await tab();
    await focused('Start Date (required)');
    // Chromium's date input in en-US takes month, day, year as typed digits.
    await page.keyboard.type('11282026');
    await expectInPage(page.getByLabel('Start Date (required)')).toHaveValue('2026-11-28');
    // Tab walks the date's month, day and year first.
    for (
      let i = 0;
      i < 3 && (await page.evaluate(() => (document.activeElement as HTMLInputElement).type)) === 'date';
      i++
    )
      await tab();
    await focused('Rooms (required)');
    await page.keyboard.type('2');
    await tab();
    await focused('Pets (required)');
    await page.keyboard.press('Space');
    await tab();
    await focused('Plan (required)');
    await page.keyboard.press('ArrowDown');
    await tab();
    await focused('Floor (required)');
    await page.keyboard.press('ArrowDown');
    await tab();
    await focused(/^Signature \(required\)/);
    await page.keyboard.press('Enter');
    // The first signature: the agreement first, then the signature dialog.
    await acceptConsentWithKeyboard(page);
    await expectInPage(page.getByRole('tab', { name: 'Draw' })).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await expectInPage(page.getByLabel('Type your name')).toBeFocused();
    await page.keyboard.press('Enter');
    await expectInPage(page.locator('.field[data-field-name="Signature"] button img')).toHaveCount(1);
    await tab();
    await focused(/^Initials \(required\)/);
    await page.keyboard.press('Enter');
    await page.keyboard.press('ArrowRight');
    await expectInPage(page.getByLabel('Type your initials')).toHaveValue('KB');
    await page.keyboard.press('Enter');
    await expectInPage(page.locator('.field[data-field-name="Initials"] button img')).toHaveCount(1);
    // Files: the key opens the browser's file chooser (the chooser itself is the system's).
    await tab();
    await focused('Photo (image) (required)');
    let chooser = page.waitForEvent('filechooser');
    await page.keyboard.press('Space');
    await (await chooser).setFiles({ name: 'photo.png', mimeType: 'image/png', buffer: PNG });
    await expectInPage(page.locator('.field[data-field-name="Photo"] label img')).toHaveCount(1);
    await tab();
    await focused('Payslip (files) (required)');
    chooser = page.waitForEvent('filechooser');
    await page.keyboard.press('Space');
    await (await chooser).setFiles({ name: 'payslip.txt', mimeType: 'text/plain', buffer: Buffer.from('pay') });
    await expectInPage(page.locator('.field[data-field-name="Payslip"]')).toContainText('payslip.txt');
    await expectInPage(page.locator('.progress')).toHaveText('10 of 10 required fields filled');
    // On to Complete: the agreement's "Read" button (agreed already), Start, Decline, Complete.
    await tab();
    await expectInPage(page.getByRole('button', { name: 'Read the agreement' })).toBeFocused();
    await expectInPage(page.locator('.consent-notice')).toContainText('You agreed to sign electronically.');
    await tab();
    await expectInPage(page.getByRole('button', { name: 'Start' })).toBeFocused();
    await tab();
    await tab();
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await page.keyboard.press('Enter');
    await expectInPage(page.getByRole('heading', { name: 'Thank you! You have completed the form.' })).toBeFocused();
    const row = await t.db.submitter.findUniqueOrThrow({ where: { id: submitter.id }, include: { submission: true } });
    const fields = row.submission.templateFields as { uuid: string; name: string }[];
    const values = Object.fromEntries(fields.map((f) => [f.name, (row.values as Record<string, unknown>)[f.uuid]]));
    expect(values).toMatchObject({
      'Full Name': 'Kay Board',
      'Start Date': '2026-11-28',
      Rooms: 2,
      Pets: true,
      Plan: 'Basic',
      Floor: 'Ground',
    });
  });

  it('the guide on a desktop: Start, Enter for Next, Close gives the boxes their inputs back', async () => {
    const submitter = await createSubmission(api, templateId, { role: 'Tenant', name: 'Gus Guide' });
    const page = await open(DESKTOP);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    await expectInPage(page.locator('.guide')).toBeHidden();
    // From the top of the page, backwards: Complete, Decline, Start.
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    await expectInPage(page.getByRole('button', { name: 'Start' })).toBeFocused();
    await page.keyboard.press('Enter');
    const guide = page.locator('.guide');
    await expectInPage(guide.getByRole('textbox', { name: 'Full Name' })).toBeFocused();
    await expectInPage(guide.locator('.guide-count')).toHaveText('1 of 3');
    await expectAccessible(page, 'desktop-guide');
    await page.keyboard.type('Gus Guide');
    await page.keyboard.press('Enter');
    await expectInPage(guide.getByRole('textbox', { name: 'Email' })).toBeFocused();
    await page.keyboard.type('gus@example.test');
    await page.keyboard.press('Enter');
    // The signature step: the tabs of the pad, Type, Enter... Next applies the typed name.
    await expectInPage(guide.locator('.guide-count')).toHaveText('3 of 3');
    await expectInPage(guide.getByRole('tab', { name: 'Draw' })).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await expectInPage(guide.getByLabel('Type your name')).toBeFocused();
    await page.keyboard.press('Enter');
    // Applying the first signature: the agreement first; then the guide goes on to Complete.
    await acceptConsentWithKeyboard(page);
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await expectInPage(page.locator('.progress')).toHaveText('3 of 3 required fields filled');
    await guide.getByRole('button', { name: 'Close' }).click();
    await expectInPage(guide).toBeHidden();
    await expectInPage(page.getByRole('textbox', { name: 'Full Name (required)' })).toHaveValue('Gus Guide');
    await expectInPage(page.locator('.field[data-field-name="Tenant Signature"] button img')).toHaveCount(1);
  });
});

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);
