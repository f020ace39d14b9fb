/**
 * Date and number values end to end (issue 15), through the REST API of a running service with
 * its jobs, GraphQL and the signing form's operations: values given in each field's format (or
 * ISO) are stored as DocuSeal stores them and answered as DocuSeal answers them (`values`), the
 * signed document and the audit log (pdftotext) show the same formatted text in the account's
 * time zone, and a value that cannot be read is a 422 naming the field with nothing written.
 * The rules themselves, format by format: test/format-values.test.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { chromium, type Browser } from 'playwright-core';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

// A browser and the completion job share two cores with other suites.
vi.setConfig({ testTimeout: 90_000 });

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-value-formats-'));
let t: TestApp;
let alice: CreatedAccount;
let templateId: number;
let browser: Browser | undefined;

const area = (y: number) => [{ x: 60, y, w: 300, h: 22, page: 1 }];
const FIELDS = [
  { name: 'Start Date', type: 'date', role: 'Client', preferences: { format: 'DD.MM.YYYY' }, areas: area(60) },
  { name: 'Meeting', type: 'date', role: 'Client', preferences: { format: 'DD/MM/YYYY HH:mm' }, areas: area(100) },
  { name: 'Month', type: 'date', role: 'Client', preferences: { format: 'MMMM YYYY' }, areas: area(140) },
  { name: 'Amount', type: 'number', role: 'Client', preferences: { format: 'eur' }, areas: area(180) },
  { name: 'Fee', type: 'number', role: 'Client', preferences: { format: 'usd' }, areas: area(220) },
  { name: 'Share', type: 'number', role: 'Client', preferences: { format: 'percent_space' }, areas: area(260) },
  { name: 'Count', type: 'number', role: 'Client', areas: area(300) },
];

/** What DocuSeal stores and answers for the values of VALUES (normalize_values.rb). */
const STORED = [
  { field: 'Start Date', value: '2024-03-05' },
  { field: 'Meeting', value: '2024-03-05T23:30:00Z' },
  { field: 'Month', value: '2024-03' },
  { field: 'Amount', value: 1234.5 },
  { field: 'Fee', value: 1234.567 },
  { field: 'Share', value: 12.5 },
  { field: 'Count', value: 42 },
];
const VALUES = {
  'Start Date': '05.03.2024',
  Meeting: '2024-03-05T23:30:00Z',
  Month: 'March 2024',
  Amount: '1 234,50 €',
  Fee: '$1,234.567',
  Share: '12,5 %',
  Count: '42',
};
/** The text the document and the audit log show, the account in Asia/Tokyo (UTC+9). */
const DRAWN = ['05.03.2024', '06/03/2024 08:30', 'March 2024', '1 234,50 €', '$1,234.57', '12,5 %', '42'];

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

async function pdfText(url: string, name: string): Promise<string> {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Formats Ltd', email: 'alice@formats.test' });
  await t.db.account.update({ where: { id: alice.accountId }, data: { timezone: 'Asia/Tokyo' } });
  const { status, json } = await api('POST', '/templates/pdf', {
    name: 'Order form',
    documents: [{ name: 'order', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
    fields: FIELDS,
  });
  expect(status, JSON.stringify(json)).toBe(200);
  templateId = json.id;
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('date and number values over REST', () => {
  it('stores values given in the fields’ formats as DocuSeal does; the document and audit log show them', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Client', email: 'client@formats.test', completed: true, values: VALUES }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    expect(openApiErrors('post', '/submissions', created.json)).toEqual([]);
    expect(created.json[0].values).toEqual(STORED);
    const submitterId = created.json[0].id;
    expect((await api('GET', `/submitters/${submitterId}`)).json.values).toEqual(STORED);

    await t.jobs.waitForIdle({ timeoutMs: 30_000, withinMs: 10_000 });
    const done = (await api('GET', `/submissions/${created.json[0].submission_id}`)).json;
    expect(done.status).toBe('completed');
    expect(done.documents).toHaveLength(1);
    const document = await pdfText(done.documents[0].url, 'document.pdf');
    const auditLog = await pdfText(done.audit_log_url, 'audit-log.pdf');
    for (const text of DRAWN) {
      expect(document).toContain(text);
      expect(auditLog).toContain(text);
    }
    // The stored forms are not what is drawn.
    expect(document).not.toContain('2024-03-05');
    expect(auditLog).toContain('START DATE 05.03.2024');
    expect(auditLog).toContain('MEETING 06/03/2024 08:30');
  });

  it('refuses a date or number that cannot be read with 422 naming the field, writing nothing', async () => {
    const before = await t.db.submission.count({ where: { accountId: alice.accountId } });
    for (const [name, value, message] of [
      ['Start Date', '31.02.2024', 'Invalid date value for Start Date: "31.02.2024" — expected a date in DD.MM.YYYY'],
      ['Meeting', 'tomorrow', 'Invalid date value for Meeting: "tomorrow"'],
      ['Amount', '1,234.50', 'Invalid number value for Amount: "1,234.50" — expected a number such as 1 234,50 €'],
      ['Count', 'abc', 'Invalid number value for Count: "abc"'],
    ]) {
      const { status, json } = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [{ role: 'Client', email: 'bad@formats.test', values: { [name!]: value } }],
      });
      expect(status, JSON.stringify(json)).toBe(422);
      expect(json.error).toContain(message);
    }
    expect(await t.db.submission.count({ where: { accountId: alice.accountId } })).toBe(before);
  });

  it('PUT /submitters/{id} reads values the same way, and refuses an unreadable one', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'later@formats.test' }],
    });
    const id = created.json[0].id;
    const bad = await api('PUT', `/submitters/${id}`, { values: { Fee: '12,5' } });
    expect(bad.status).toBe(422);
    expect(bad.json.error).toContain('Invalid number value for Fee: "12,5"');
    const put = await api('PUT', `/submitters/${id}`, { values: { 'Start Date': '2024-03-05', Fee: '$1,000' } });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(openApiErrors('put', '/submitters/{id}', put.json)).toEqual([]);
    expect(put.json.values).toEqual([
      { field: 'Start Date', value: '2024-03-05' },
      { field: 'Fee', value: 1000 },
    ]);
  });
});

describe('date and number values over GraphQL and the signing form', () => {
  it('createSubmissions and completeSigningForm store them as REST does', async () => {
    const { body } = await graphql(
      t.url,
      `mutation ($input: CreateSubmissionsInput!) {
        createSubmissions(input: $input) { submitters { id slug values } }
      }`,
      {
        key: alice.apiKey,
        variables: {
          input: {
            templateId,
            sendEmail: false,
            submitters: [
              { role: 'Client', email: 'gql@formats.test', values: { Amount: '1 234,50 €', Month: 'Mar 2024' } },
            ],
          },
        },
      },
    );
    expect(body.errors).toBeUndefined();
    const [submitter] = body.data.createSubmissions.submitters;
    expect(submitter.values).toEqual([
      { field: 'Month', value: '2024-03' },
      { field: 'Amount', value: 1234.5 },
    ]);
    const bad = await graphql(
      t.url,
      `mutation ($input: CreateSubmissionsInput!) { createSubmissions(input: $input) { submitters { id } } }`,
      {
        key: alice.apiKey,
        variables: {
          input: {
            templateId,
            submitters: [{ role: 'Client', email: 'lots@formats.test', values: { Share: 'lots' } }],
          },
        },
      },
    );
    expect(bad.body.errors?.[0]?.message).toContain('Invalid number value for Share: "lots"');

    // The signer completes with the date typed in the field's format: stored as DocuSeal stores it.
    const form = `query ($slug: String!) { signingForm(slug: $slug) { fields { uuid name } } }`;
    const loaded = await graphql(t.url, form, { variables: { slug: submitter.slug } });
    const uuid = (name: string) =>
      loaded.body.data.signingForm.fields.find((f: { name: string }) => f.name === name).uuid;
    const complete = `mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) {
      state } }`;
    await acceptConsentViaApi(t.url, submitter.slug);
    const refused = await graphql(t.url, complete, {
      variables: { slug: submitter.slug, values: { [uuid('Start Date')]: '31.02.2024' } },
    });
    expect(refused.body.errors?.[0]?.message).toBe(
      'Start Date is invalid: not a date (expected a date in DD.MM.YYYY or YYYY-MM-DD)',
    );
    const values = {
      [uuid('Start Date')]: '05.03.2024',
      [uuid('Meeting')]: '2024-03-05T23:30:00.000Z',
      [uuid('Fee')]: 1234.567,
      [uuid('Share')]: 12.5,
      [uuid('Count')]: 42,
    };
    const done = await graphql(t.url, complete, { variables: { slug: submitter.slug, values } });
    expect(done.body.errors).toBeUndefined();
    const rested = (await api('GET', `/submitters/${submitter.id}`)).json;
    expect(rested.values).toEqual([
      { field: 'Start Date', value: '2024-03-05' },
      { field: 'Meeting', value: '2024-03-05T23:30:00Z' },
      { field: 'Month', value: '2024-03' },
      { field: 'Amount', value: 1234.5 },
      { field: 'Fee', value: 1234.567 },
      { field: 'Share', value: 12.5 },
      { field: 'Count', value: 42 },
    ]);
  });
});

describe('{{date}} at completion', () => {
  it('becomes the completion date in the account’s time zone, as the format stores it, on every path', async () => {
    const tokyo = (style: 'day' | 'month') =>
      new Intl.DateTimeFormat('en-CA', {
        timeZone: 'Asia/Tokyo',
        year: 'numeric',
        month: '2-digit',
        ...(style === 'day' ? { day: '2-digit' } : {}),
      }).format(new Date());
    const valuesOf = async (id: number) =>
      Object.fromEntries(
        (await api('GET', `/submitters/${id}`)).json.values.map((v: { field: string; value: unknown }) => [
          v.field,
          v.value,
        ]),
      );

    // POST /submissions with completed: true (DocuSeal's create_from_submitters).
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        {
          role: 'Client',
          email: 'today@formats.test',
          completed: true,
          values: { 'Start Date': '{{date}}', Month: '{{date}}' },
        },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    expect(await valuesOf(created.json[0].id)).toMatchObject({ 'Start Date': tokyo('day'), Month: tokyo('month') });

    // PUT /submitters/{id} with completed: true: kept as "{{date}}" until then.
    const later = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'put@formats.test', values: { Meeting: '{{date}}' } }],
    });
    const id = later.json[0].id;
    expect(later.json[0].values).toEqual([{ field: 'Meeting', value: '{{date}}' }]);
    const before = Date.now();
    expect((await api('PUT', `/submitters/${id}`, { completed: true })).status).toBe(200);
    const meeting = (await valuesOf(id)).Meeting as string;
    expect(meeting).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Math.abs(Date.parse(meeting) - before)).toBeLessThan(60_000);

    // The signing form's completion.
    const form = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'form@formats.test', values: { ...VALUES, 'Start Date': '{{date}}' } }],
    });
    const slug = form.json[0].slug;
    await acceptConsentViaApi(t.url, slug);
    const done = await graphql(t.url, 'mutation ($slug: String!) { completeSigningForm(slug: $slug) { state } }', {
      variables: { slug },
    });
    expect(done.body.errors).toBeUndefined();
    expect((await valuesOf(form.json[0].id))['Start Date']).toBe(tokyo('day'));
  });
});

describe('date and number values on the signing page (Chromium)', () => {
  it('collects a day, a month and a local date-time as the format stores them; shows numbers formatted', async () => {
    const created = await api('POST', '/templates/pdf', {
      name: 'Booking',
      documents: [{ name: 'booking', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
      fields: FIELDS.slice(0, 4),
    });
    const submission = await api('POST', '/submissions', {
      template_id: created.json.id,
      send_email: false,
      submitters: [
        { role: 'Client', email: 'page@formats.test', values: { Amount: '1234,5' }, readonly_fields: ['Amount'] },
      ],
    });
    expect(submission.status, JSON.stringify(submission.json)).toBe(200);
    // `eur` has a decimal comma: 1234,5 is 1234.5 (Ruby's to_f would read 1234).
    expect(submission.json[0].values).toEqual([{ field: 'Amount', value: 1234.5 }]);
    browser ??= await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
    // A signer in Berlin (UTC+1 in March): the local time is stored as the instant in UTC.
    const context = await browser.newContext({ timezoneId: 'Europe/Berlin', locale: 'en-GB' });
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    await page.goto(submission.json[0].embed_src);
    await page.locator('.action-bar').waitFor();
    const field = (name: string) => page.locator(`.field.own[data-field-name="${name}"]`).first();
    await expectInPage(field('Amount')).toContainText('1 234,50 €');
    await field('Start Date').locator('input[type="date"]').fill('2024-03-05');
    await field('Month').locator('input[type="month"]').fill('2024-03');
    await field('Meeting').locator('input[type="datetime-local"]').fill('2024-03-05T14:30');
    await page.getByRole('button', { name: 'Complete', exact: true }).click();
    await acceptConsent(page);
    await page.getByText('Thank you! You have completed the form.').waitFor();
    await context.close();
    const values = (await api('GET', `/submitters/${submission.json[0].id}`)).json.values;
    expect(values).toEqual([
      { field: 'Start Date', value: '2024-03-05' },
      { field: 'Meeting', value: '2024-03-05T13:30:00Z' },
      { field: 'Month', value: '2024-03' },
      { field: 'Amount', value: 1234.5 },
    ]);
  });
});
