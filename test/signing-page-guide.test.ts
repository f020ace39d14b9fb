/**
 * The guided panel of the signer's page (issue 24 §1, done-when) in Chromium:
 * - on a 390×844 touch screen a signer completes text, date, number, checkbox, select,
 *   signature, initials and file fields in the panel without zooming: every control of the panel
 *   has text of at least 16 px and is at least 44 px tall, no visible input on the page is
 *   smaller than 16 px, the document scrolls to each field and marks it; the signed PDF has the
 *   values, and the date reads as the page showed it;
 * - on a desktop the same guide opens with Start, Enter moves on, and the boxes take inputs again
 *   when it is closed; conditions (a hidden field is skipped), go_to_last and Decline work with it;
 * - keyboard only: every field type completed with key presses alone.
 * Screenshots of the states go to $SIGNET_SCREENSHOTS when it is set (for looking at them).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage } from './helpers/browser.ts';
import {
  apiOf,
  closeWatched,
  createSubmission,
  createTemplate,
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
const opened: Watched[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-guide-'));
const shots = process.env.SIGNET_SCREENSHOTS;

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

async function open(options = {}): Promise<Page> {
  const watched = await openWatchedPage(browser, options);
  opened.push(watched);
  return watched.page;
}

async function shoot(page: Page, name: string): Promise<void> {
  if (!shots) return;
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

/** The signer's saved values by field name. */
async function savedValues(submitterId: number): Promise<Record<string, unknown>> {
  const submitter = await t.db.submitter.findUniqueOrThrow({
    where: { id: submitterId },
    include: { submission: true },
  });
  const fields = submitter.submission.templateFields as { uuid: string; name: string }[];
  const values = submitter.values as Record<string, unknown>;
  return Object.fromEntries(fields.filter((f) => f.uuid in values).map((f) => [f.name, values[f.uuid]]));
}

/**
 * The panel's controls that can be seen: each one's font size and box, and every visible input,
 * select and textarea on the page with a font under 16 px (what makes a phone zoom on focus).
 */
async function measure(page: Page) {
  return page.evaluate(() => {
    const visible = (e: Element) => {
      const r = e.getBoundingClientRect();
      const style = getComputedStyle(e);
      return r.width > 0 && r.height > 0 && style.visibility !== 'hidden' && style.opacity !== '0';
    };
    const guide = document.querySelector('.guide')!;
    const controls = [...guide.querySelectorAll('input, select, textarea, button, label.guide-file-button')]
      .filter(visible)
      .map((e) => {
        const r = e.getBoundingClientRect();
        const target = e.closest('label.guide-check, label.guide-choice') ?? e;
        const t = target.getBoundingClientRect();
        const type = (e as HTMLInputElement).type;
        return {
          what: `${e.tagName.toLowerCase()}${type ? `[${type}]` : ''} ${e.textContent?.trim() ?? ''}`,
          font: Number.parseFloat(getComputedStyle(e).fontSize),
          // A checkbox's target is its whole label row.
          height: Math.max(r.height, t.height),
          width: Math.max(r.width, t.width),
        };
      });
    const small = [...document.querySelectorAll('input, select, textarea')]
      .filter(
        (e) => visible(e) && (e as HTMLInputElement).type !== 'checkbox' && (e as HTMLInputElement).type !== 'radio',
      )
      .filter((e) => Number.parseFloat(getComputedStyle(e).fontSize) < 16)
      .map((e) => `${e.tagName} ${e.getAttribute('aria-label') ?? e.id} ${getComputedStyle(e).fontSize}`);
    return { controls, small, scrollWidth: document.documentElement.scrollWidth };
  });
}

async function expectReadable(page: Page): Promise<void> {
  const { controls, small, scrollWidth } = await measure(page);
  expect(small, 'inputs a phone would zoom into').toEqual([]);
  expect(scrollWidth).toBeLessThanOrEqual(390);
  for (const control of controls) {
    expect(control.font, `${control.what}: font size`).toBeGreaterThanOrEqual(16);
    if (!control.what.startsWith('input[file]')) {
      expect(control.height, `${control.what}: height`).toBeGreaterThanOrEqual(44);
      expect(control.width, `${control.what}: width`).toBeGreaterThanOrEqual(24);
    }
  }
}

/** The current field's box on the document is marked and on screen, above the panel. */
async function expectFieldShown(page: Page, name: string): Promise<void> {
  const box = page.locator(`.field.current[data-field-name="${name}"]`).first();
  await expectInPage(box).toBeInViewport();
  await expect
    .poll(async () => {
      const field = (await box.boundingBox())!;
      const panel = (await page.locator('.action-bar').boundingBox())!;
      return field.y + field.height <= panel.y + 1;
    })
    .toBe(true);
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Guide Ltd', email: 'alice@signing-guide.test' });
  api = apiOf(t.url, alice.apiKey);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});

afterEach(async () => {
  for (const watched of opened.splice(0)) await closeWatched(watched, t.url);
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const EVERY_TYPE = [
  { name: 'Full Name', areas: [{ x: 60, y: 100, w: 240, h: 22, page: 1 }] },
  { name: 'Start Date', type: 'date', areas: [{ x: 320, y: 100, w: 140, h: 22, page: 1 }] },
  { name: 'Rooms', type: 'number', areas: [{ x: 60, y: 140, w: 80, h: 22, page: 1 }] },
  { name: 'Pets', type: 'checkbox', areas: [{ x: 160, y: 140, w: 16, h: 16, page: 1 }] },
  { name: 'Plan', type: 'select', options: ['Basic', 'Premium'], areas: [{ x: 200, y: 140, w: 120, h: 22, page: 1 }] },
  { name: 'Signature', type: 'signature', areas: [{ x: 60, y: 400, w: 200, h: 60, page: 1 }] },
  { name: 'Initials', type: 'initials', areas: [{ x: 300, y: 400, w: 80, h: 40, page: 1 }] },
  { name: 'Payslip', type: 'file', areas: [{ x: 60, y: 480, w: 200, h: 30, page: 1 }] },
];

describe('on a phone', () => {
  it('completes every field type in the panel without zooming; the signed PDF has the values', async () => {
    const templateId = await createTemplate(
      api,
      'Tenancy agreement',
      EVERY_TYPE.map((f) => ({ role: 'Tenant', ...f })),
      'docuseal-sample-document.pdf',
      'nda',
    );
    const submitter = await createSubmission(api, templateId, { role: 'Tenant', name: 'Rosa Parks' });
    const page = await open(PHONE);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    // Named after the template, not the document's file.
    await expectInPage(page).toHaveTitle('Tenancy agreement · Signet');
    await expectInPage(page.getByRole('heading', { level: 1 })).toHaveText('Tenancy agreement');

    const guide = page.locator('.guide');
    const next = guide.getByRole('button', { name: 'Next' });
    await expectInPage(guide.locator('.guide-count')).toHaveText('1 of 8');
    await expectFieldShown(page, 'Full Name');
    await expectReadable(page);
    await shoot(page, 'phone-guide-text');

    // Text: required, so Next first says so.
    await next.tap();
    await expectInPage(guide.locator('.guide-error')).toHaveText('Full Name is required');
    await expectInPage(guide.getByRole('textbox', { name: 'Full Name' })).toBeFocused();
    await page.keyboard.type('Rosa Parks');
    await expectInPage(guide.locator('.guide-error')).toBeHidden();
    await next.tap();

    await expectInPage(guide.locator('.guide-count')).toHaveText('2 of 8');
    await expectFieldShown(page, 'Start Date');
    await guide.getByLabel('Start Date').fill('2026-11-28');
    await guide.getByLabel('Start Date').blur();
    // The date as the signed document prints it.
    await expectInPage(guide.locator('.date-shown')).toHaveText('28/11/2026');
    await expectReadable(page);
    await shoot(page, 'phone-guide-date');
    await next.tap();

    await expectFieldShown(page, 'Rooms');
    await guide.getByRole('spinbutton', { name: 'Rooms' }).fill('3');
    await next.tap();

    await expectFieldShown(page, 'Pets');
    await guide.getByRole('checkbox', { name: 'Pets' }).tap();
    await expectReadable(page);
    await next.tap();

    await expectFieldShown(page, 'Plan');
    await guide.getByRole('combobox', { name: 'Plan' }).selectOption('Premium');
    await expectReadable(page);
    await next.tap();

    // Signature: the pad in the panel, as wide as the screen; Next applies what is drawn.
    await expectInPage(guide.locator('.guide-count')).toHaveText('6 of 8');
    await expectFieldShown(page, 'Signature');
    const pad = (await guide.locator('canvas.signature-canvas').boundingBox())!;
    expect(pad.width).toBeGreaterThanOrEqual(390 - 2 * 12 - 2);
    await expectReadable(page);
    await drawWithTouch(page, '.guide canvas.signature-canvas');
    await shoot(page, 'phone-guide-signature');
    await next.tap();
    // The first signature: the agreement to sign electronically first, then the panel goes on.
    await page.getByRole('dialog', { name: 'Agreement to sign electronically' }).waitFor();
    await shoot(page, 'phone-guide-consent');
    await acceptConsent(page);
    await expectInPage(page.locator('.field[data-field-name="Signature"] .field-display img')).toHaveCount(1);

    // Initials: typed (suggested from the name).
    await expectInPage(guide.locator('.guide-count')).toHaveText('7 of 8');
    await guide.getByRole('tab', { name: 'Type' }).tap();
    await expectInPage(guide.getByLabel('Type your initials')).toHaveValue('RP');
    await expectReadable(page);
    await next.tap();

    // File: the last step; its Next hands over to Complete.
    await expectInPage(guide.locator('.guide-count')).toHaveText('8 of 8');
    await guide.locator('input[type="file"]').setInputFiles({
      name: 'payslip.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('net pay 1000'),
    });
    await expectInPage(guide.locator('.guide-file-chosen')).toHaveText('payslip.txt');
    await expectReadable(page);
    await shoot(page, 'phone-guide-file');
    await guide.getByRole('button', { name: 'Done' }).tap();
    await expectInPage(page.locator('#complete-button')).toBeFocused();
    await expectInPage(page.locator('.progress')).toHaveText('8 of 8 required fields filled');
    await page.locator('#complete-button').tap();
    const heading = page.getByRole('heading', { name: 'Thank you! You have completed the form.' });
    await expectInPage(heading).toBeFocused();
    await shoot(page, 'phone-completed');

    expect(await savedValues(submitter.id)).toMatchObject({
      'Full Name': 'Rosa Parks',
      'Start Date': '2026-11-28',
      Rooms: 3,
      Pets: true,
      Plan: 'Premium',
      Signature: expect.stringMatching(/^[0-9a-f-]{36}$/),
      Initials: expect.stringMatching(/^[0-9a-f-]{36}$/),
      Payslip: [expect.stringMatching(/^[0-9a-f-]{36}$/)],
    });
    // The completed card names its file.
    await expectInPage(page.getByRole('link', { name: 'Download nda.pdf' })).toBeVisible({ timeout: 60_000 });
    const done = (await api('GET', `/submissions/${submitter.submission_id}`)).json;
    const file = path.join(tmp, 'tenancy.pdf');
    fs.writeFileSync(file, Buffer.from(await (await fetch(done.documents[0].url)).arrayBuffer()));
    const text = execFileSync('pdftotext', [file, '-']).toString();
    for (const value of ['Rosa Parks', '28/11/2026', '3', 'Premium']) expect(text).toContain(value);
  });
});

describe('the panel keeps the page’s rules', () => {
  it('skips a field its conditions hide, resumes at the field to fill (go_to_last), saves as it goes', async () => {
    const templateId = await createTemplate(api, 'Conditional', [
      { name: 'Full Name', role: 'Signer', areas: [{ x: 60, y: 100, w: 240, h: 22, page: 1 }] },
      {
        name: 'Has company',
        type: 'checkbox',
        required: false,
        role: 'Signer',
        areas: [{ x: 60, y: 140, w: 18, h: 18, page: 1 }],
      },
      {
        name: 'Company',
        role: 'Signer',
        areas: [{ x: 60, y: 180, w: 240, h: 22, page: 1 }],
        conditions: [{ field_name: 'Has company', action: 'checked' }],
      },
      { name: 'City', role: 'Signer', areas: [{ x: 60, y: 220, w: 240, h: 22, page: 1 }] },
    ]);
    const submitter = await createSubmission(api, templateId, {}, { go_to_last: true });
    const page = await open(PHONE);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    const guide = page.locator('.guide');
    const next = guide.getByRole('button', { name: 'Next' });
    // Company is hidden until Has company is ticked: three steps.
    await expectInPage(guide.locator('.guide-count')).toHaveText('1 of 3');
    await guide.getByRole('textbox', { name: 'Full Name' }).fill('Ada');
    await next.tap();
    await expectInPage(guide.locator('.guide-count')).toHaveText('2 of 3');
    await guide.getByRole('checkbox', { name: 'Has company' }).tap();
    await expectInPage(guide.locator('.guide-count')).toHaveText('2 of 4');
    await next.tap();
    await expectInPage(guide.getByRole('textbox', { name: 'Company' })).toBeFocused();
    await guide.getByRole('button', { name: 'Back' }).tap();
    await guide.getByRole('checkbox', { name: 'Has company' }).tap();
    await expectInPage(guide.locator('.guide-count')).toHaveText('2 of 3');
    await next.tap();
    await expectInPage(guide.getByRole('textbox', { name: 'City' })).toBeFocused();
    await expectInPage(page.locator('.status')).toHaveText('All changes saved.');
    expect(await savedValues(submitter.id)).toMatchObject({ 'Full Name': 'Ada', 'Has company': false });

    // Back later: the panel opens where DocuSeal's form resumes — the field after the last one
    // with a value (an unticked checkbox has none), before the first required one left empty.
    await page.reload();
    await waitForForm(page);
    await expectInPage(guide.locator('.guide-count')).toHaveText('2 of 3');
    await expectInPage(guide.getByRole('checkbox', { name: 'Has company' })).toBeFocused();
    await expectFieldShown(page, 'Has company');

    // Decline from the panel's page.
    await page.locator('#decline-button').tap();
    await page.getByLabel('Reason').fill('Not mine');
    await page.locator('dialog.decline-dialog').getByRole('button', { name: 'Decline' }).tap();
    await expectInPage(page.getByRole('heading', { name: 'Form has been declined.' })).toBeFocused();
    expect((await api('GET', `/submitters/${submitter.id}`)).json.declined_at).toMatch(/Z$/);
  });
});

describe('Complete from the panel', () => {
  it('a signature drawn on the pad and not yet applied is part of what Complete completes', async () => {
    const templateId = await createTemplate(api, 'Quick', [
      { name: 'Full Name', role: 'Signer', areas: [{ x: 60, y: 100, w: 240, h: 22, page: 1 }] },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 160, w: 200, h: 60, page: 1 }] },
    ]);
    const submitter = await createSubmission(api, templateId);
    const page = await open(PHONE);
    await page.goto(submitter.embed_src);
    await waitForForm(page);
    const guide = page.locator('.guide');
    await guide.getByRole('textbox', { name: 'Full Name' }).fill('Quick Signer');
    await guide.getByRole('button', { name: 'Next' }).tap();
    await drawWithTouch(page, '.guide canvas.signature-canvas');
    await page.locator('#complete-button').tap();
    // The signature on the pad is the first: the agreement comes first, then Complete goes on.
    await acceptConsent(page);
    await expectInPage(page.getByRole('heading', { name: 'Thank you! You have completed the form.' })).toBeFocused();
    expect(await savedValues(submitter.id)).toMatchObject({
      'Full Name': 'Quick Signer',
      Signature: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });
});
