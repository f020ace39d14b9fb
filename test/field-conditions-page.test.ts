/**
 * Field conditions on the signer's page (issue 15; docs/signing-form.md "Conditions"), in Debian's
 * Chromium (playwright-core) against a real service: a field whose conditions are not met is
 * hidden (every box of it) and not required (nor counted in the progress), it appears as soon as
 * the value it depends on changes and disappears again; completing with it hidden and empty
 * succeeds and the server keeps no value for it (what the signer typed before hiding it is
 * dropped), while a shown one left empty is refused in the page.
 * Checked only with web-first assertions (test/helpers/browser.ts); no request leaves the
 * service's origin and the page raises no error.
 */
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
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

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Conditions Page Ltd', email: 'alice@conditions-page.test' });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** The message shown at a field: the last element its input's aria-describedby names. */
async function errorOf(input: Locator): Promise<Locator> {
  const ids = (await input.getAttribute('aria-describedby'))?.split(' ') ?? [];
  expect(ids.length, 'the input names its message in aria-describedby').toBeGreaterThan(0);
  return input.page().locator(`#${ids.at(-1)}`);
}

async function waitForForm(page: Page): Promise<void> {
  await page.locator('.action-bar').waitFor();
  await page.locator('.page[data-rendered="true"]').first().waitFor();
}

describe('conditions in the page', () => {
  it('hides a field while its conditions are not met, shows it as the value changes, and completes', async () => {
    const created = await api('POST', '/templates/pdf', {
      name: 'Conditional form',
      documents: [{ name: 'Conditional form', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
      fields: [
        { name: 'Full Name', role: 'Signer', areas: area(100) },
        { name: 'Has company', type: 'checkbox', required: false, role: 'Signer', areas: area(140) },
        {
          name: 'Company',
          role: 'Signer',
          areas: area(180),
          conditions: [{ field_name: 'Has company', action: 'checked' }],
        },
        { name: 'Plan', type: 'select', options: ['Basic', 'Pro'], required: false, role: 'Signer', areas: area(220) },
        {
          name: 'Seats',
          type: 'number',
          role: 'Signer',
          areas: [...area(260), ...area(300)],
          conditions: [{ field_name: 'Plan', action: 'equal', value: 'Pro' }],
        },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const submission = await api('POST', '/submissions', {
      template_id: created.json.id,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'signer@conditions-page.test' }],
    });
    expect(submission.status, JSON.stringify(submission.json)).toBe(200);
    const signer = submission.json[0] as { id: number; embed_src: string };

    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    const origin = new URL(t.url).origin;
    const outside: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin) outside.push(url);
    });
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      await page.goto(signer.embed_src);
      await waitForForm(page);

      const companyBox = page.locator('.field[data-field-name="Company"]');
      const seatsBoxes = page.locator('.field[data-field-name="Seats"]');
      const company = page.getByRole('textbox', { name: 'Company (required)' });
      const seats = page.getByRole('spinbutton', { name: 'Seats (required)' });
      const hasCompany = page.getByRole('checkbox', { name: 'Has company' });
      const progress = page.locator('.progress');

      // Both conditional fields are on the page, hidden, and not counted as required.
      await expectInPage(companyBox).toHaveCount(1);
      await expectInPage(companyBox).toBeHidden();
      await expectInPage(seatsBoxes).toHaveCount(2);
      await expectInPage(seatsBoxes.first()).toBeHidden();
      await expectInPage(seatsBoxes.last()).toBeHidden();
      await expectInPage(progress).toHaveText('0 of 1 required fields filled');

      // Ticking the box shows Company at once, required; unticking hides it again.
      await hasCompany.check();
      await expectInPage(company).toBeVisible();
      await expectInPage(progress).toHaveText('0 of 2 required fields filled');
      await hasCompany.uncheck();
      await expectInPage(companyBox).toBeHidden();
      await expectInPage(progress).toHaveText('0 of 1 required fields filled');

      // An option: Seats (both of its areas) shows for Pro only.
      const plan = page.getByRole('combobox', { name: 'Plan' });
      await plan.selectOption('Pro');
      await expectInPage(seats).toBeVisible();
      await expectInPage(seatsBoxes.last()).toBeVisible();
      await plan.selectOption('Basic');
      await expectInPage(seatsBoxes.first()).toBeHidden();
      await expectInPage(seatsBoxes.last()).toBeHidden();

      // Shown and empty, Company stops the completion in the page.
      await page.getByRole('textbox', { name: 'Full Name (required)' }).fill('Visible Person');
      await hasCompany.check();
      await page.locator('#complete-button').click();
      await expectInPage(await errorOf(company)).toHaveText('Company is required');
      await expectInPage(company).toBeFocused();

      // Typed in, then hidden again: the form completes and the value is not kept.
      await company.fill('Temporary Company');
      await hasCompany.uncheck();
      await expectInPage(companyBox).toBeHidden();
      await page.locator('#complete-button').click();
      await acceptConsent(page);
      await page.getByText('Thank you! You have completed the form.').waitFor();
    } finally {
      await context.close();
    }
    expect(outside, 'requests outside the service').toEqual([]);
    expect(problems, 'page errors').toEqual([]);

    const submitter = (await api('GET', `/submitters/${signer.id}`)).json;
    const listedValue = (name: string) => submitter.values.find((v: { field: string }) => v.field === name)?.value;
    expect(submitter.status).toBe('completed');
    expect(listedValue('Full Name')).toBe('Visible Person');
    expect(listedValue('Has company')).toBe(false);
    expect(listedValue('Company')).toBeNull();
    expect(listedValue('Seats')).toBeNull();
  });
});
