/**
 * PUT /submitters/{id} honours every property of DocuSeal's OpenAPI for the route (and DocuSeal's
 * other keys: application_key, go_to_last, readonly_fields), as DocuSeal's
 * app/controllers/api/submitters_controller.rb#update does: one test per property, each checked
 * where its effect shows (the answer and GET, the signing form's view, the next request email
 * through a real SMTP server, the SMS outbox, the completion pipeline), every answer validated
 * against the OpenAPI schema; DocuSeal's refusals; the signing page (Chromium) opening where
 * go_to_last says; and the GraphQL `updateSubmitter` mutation doing the same.
 */
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let alice: CreatedAccount;
let templateId: number;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);
const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));

const FORM = /* GraphQL */ `
  query Form($slug: String!) {
    signingForm(slug: $slug) {
      completedRedirectUrl goToLast
      fields { name required readonly defaultValue value validation preferences }
    }
  }
`;

/**
 * A value for each of the Client's fields: a completed party lists every field, `null` for one
 * without a value, as DocuSeal does, and the OpenAPI schema has no null there.
 */
const ALL_VALUES = { 'Full Name': 'Done Client', Company: 'Acme', Code: 'ABCD' };

/** The signing form's view of a slug (no API key: the page's own query). */
async function formOf(slug: string) {
  const { body } = await graphql(t.url, FORM, { variables: { slug } });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data.signingForm as {
    completedRedirectUrl: string | null;
    goToLast: boolean;
    fields: { name: string; required: boolean; readonly: boolean; defaultValue: unknown; validation: unknown }[];
  };
}

const fieldOf = async (slug: string, name: string) => (await formOf(slug)).fields.find((f) => f.name === name)!;

/** A new Client party (no request sent unless `extra` asks), with its id and slug. */
async function newClient(extra: Record<string, unknown> = {}) {
  const { status, json } = await api('POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [{ role: 'Client', email: `client${Math.random().toString(36).slice(2, 8)}@example.test`, ...extra }],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0] as { id: number; slug: string; email: string; submission_id: number };
}

/** PUT /submitters/{id} that must succeed, its answer checked against the OpenAPI schema. */
async function put(id: number, body: unknown) {
  const { status, json } = await api('PUT', `/submitters/${id}`, body);
  expect(status, JSON.stringify(json)).toBe(200);
  expect(openApiErrors('put', '/submitters/{id}', json)).toEqual([]);
  return json;
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@example.test>' } });
  alice = await t.createAccount({ name: 'Acme Inc', email: 'alice@update.test', firstName: 'Alice' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Service agreement',
    documents: [{ name: 'agreement', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Full Name', role: 'Client', required: true, areas: [{ x: 72, y: 72, w: 150, h: 20, page: 1 }] },
      { name: 'Company', role: 'Client', required: false, areas: [{ x: 72, y: 110, w: 150, h: 20, page: 1 }] },
      { name: 'Code', role: 'Client', required: false, areas: [{ x: 72, y: 150, w: 150, h: 20, page: 1 }] },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 300, w: 150, h: 20, page: 1 }] },
    ],
  });
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

describe('PUT /submitters/{id}: each property', () => {
  it('name, email and phone change the submitter (answer and GET)', async () => {
    const client = await newClient();
    const json = await put(client.id, { name: 'Zoë', email: ' New@Example.test ', phone: '+1 (555) 010-2030' });
    expect(json).toMatchObject({ name: 'Zoë', email: 'new@example.test', phone: '+15550102030' });
    const read = await api('GET', `/submitters/${client.id}`);
    expect(read.json).toMatchObject({ name: 'Zoë', email: 'new@example.test', phone: '+15550102030' });
    // Blank clears them.
    expect(await put(client.id, { email: '', phone: '' })).toMatchObject({ name: 'Zoë', email: null, phone: null });
  });

  it('values are merged into the stored values and become the fields’ defaults in the form', async () => {
    const client = await newClient({ values: { Company: 'Acme' } });
    const json = await put(client.id, { values: { full_name: 'Zoë Client' } });
    expect(json.values).toEqual([
      { field: 'Full Name', value: 'Zoë Client' },
      { field: 'Company', value: 'Acme' },
    ]);
    expect(await fieldOf(client.slug, 'Full Name')).toMatchObject({ defaultValue: 'Zoë Client', value: 'Zoë Client' });
  });

  it('external_id, and application_key (the earlier name), set external_id', async () => {
    const client = await newClient();
    expect((await put(client.id, { external_id: 'ext-1' })).external_id).toBe('ext-1');
    expect((await put(client.id, { application_key: 'ext-2' })).external_id).toBe('ext-2');
    expect((await api('GET', `/submitters?external_id=ext-2`)).json.data.map((s: { id: number }) => s.id)).toEqual([
      client.id,
    ]);
  });

  it('metadata replaces the stored metadata', async () => {
    const client = await newClient({ metadata: { a: 1, b: 'two' } });
    expect((await put(client.id, { metadata: { c: [3] } })).metadata).toEqual({ c: [3] });
    expect((await api('GET', `/submitters/${client.id}`)).json.metadata).toEqual({ c: [3] });
    expect((await put(client.id, { metadata: {} })).metadata).toEqual({});
    expect((await put(client.id, { name: 'Kept' })).metadata).toEqual({});
    expect(await api('PUT', `/submitters/${client.id}`, { metadata: 'x' })).toEqual({
      status: 422,
      json: { error: 'metadata must be a Object' },
    });
    // Held to the create request's limit (docs/security.md), and nothing is written.
    const tooLarge = await api('PUT', `/submitters/${client.id}`, {
      name: 'No',
      metadata: { big: 'x'.repeat(70_000) },
    });
    expect(tooLarge.status).toBe(422);
    expect(tooLarge.json.error).toMatch(/^metadata is too large/);
    expect((await api('GET', `/submitters/${client.id}`)).json).toMatchObject({ name: 'Kept', metadata: {} });
  });

  it('send_email true sends the request again; message and reply_to are used in the next email', async () => {
    const client = await newClient();
    // Stored without sending: the next request email uses them.
    await put(client.id, {
      message: { subject: 'Please sign {{template.name}}', body: 'Hello, sign here: {{submitter.link}}' },
      reply_to: 'owner@acme.test',
    });
    await t.app.jobs.waitForIdle();
    expect(mailsTo(client.email)).toHaveLength(0);
    await put(client.id, { send_email: true });
    await t.app.jobs.waitForIdle();
    const [mail] = mailsTo(client.email);
    expect(mail!.parsed.subject).toBe('Please sign Service agreement');
    expect(mail!.parsed.text).toContain(`Hello, sign here: ${t.url}/s/${client.slug}`);
    expect(mail!.parsed.replyTo?.text).toBe('owner@acme.test');
    expect((await api('GET', `/submitters/${client.id}`)).json.preferences).toMatchObject({
      send_email: true,
      reply_to: 'owner@acme.test',
    });
    await put(client.id, { send_email: true, message: { subject: 'Reminder', body: 'Still waiting' } });
    await t.app.jobs.waitForIdle();
    expect(mailsTo(client.email).map((m) => m.parsed.subject)).toEqual(['Please sign Service agreement', 'Reminder']);
  });

  it('send_sms true sends the SMS again', async () => {
    const client = await newClient({ phone: '+15550001111' });
    await put(client.id, { send_sms: true });
    await t.app.jobs.waitForIdle();
    const sms = await t.db.smsMessage.findMany({ where: { submitterId: client.id } });
    expect(sms.map((s) => [s.to, s.body.includes(`/s/${client.slug}`)])).toEqual([['+15550001111', true]]);
    expect((await api('GET', `/submitters/${client.id}`)).json.preferences.send_sms).toBe(true);
  });

  it('completed_redirect_url is where the form sends the signer after completing', async () => {
    const client = await newClient();
    expect((await put(client.id, { completed_redirect_url: 'https://acme.test/done' })).preferences).toMatchObject({
      completed_redirect_url: 'https://acme.test/done',
    });
    expect((await formOf(client.slug)).completedRedirectUrl).toBe('https://acme.test/done');
  });

  it('go_to_last is stored and opens the form at the first field still to fill', async () => {
    const client = await newClient();
    // DocuSeal's default: false before the first open.
    expect((await formOf(client.slug)).goToLast).toBe(false);
    expect((await put(client.id, { go_to_last: true })).preferences).toMatchObject({ go_to_last: true });
    expect((await formOf(client.slug)).goToLast).toBe(true);
    await put(client.id, { go_to_last: false });
    expect((await formOf(client.slug)).goToLast).toBe(false);
  });

  it('require_email_2fa / require_phone_2fa: true is refused (no one-time codes), false is stored', async () => {
    const client = await newClient();
    for (const key of ['require_email_2fa', 'require_phone_2fa'])
      expect(await api('PUT', `/submitters/${client.id}`, { [key]: true, name: 'Not stored' })).toEqual({
        status: 422,
        json: { error: `${key} is not supported: the signing form has no one-time codes` },
      });
    const json = await put(client.id, { require_email_2fa: false, require_phone_2fa: 'false' });
    expect(json.preferences).toMatchObject({ require_email_2fa: false, require_phone_2fa: false });
    expect(json.name).toBeNull();
  });

  it('readonly_fields makes those fields read-only in the signing form', async () => {
    const client = await newClient({ values: { Company: 'Acme' } });
    expect((await fieldOf(client.slug, 'Company')).readonly).toBe(false);
    await put(client.id, { readonly_fields: ['company'] });
    expect(await fieldOf(client.slug, 'Company')).toMatchObject({ readonly: true, value: 'Acme' });
    expect((await fieldOf(client.slug, 'Full Name')).readonly).toBe(false);
    const uuid = (await t.db.submission.findUniqueOrThrow({ where: { id: client.submission_id } })).templateFields;
    const company = (uuid as { uuid: string; name: string }[]).find((f) => f.name === 'Company')!.uuid;
    const { body } = await graphql(
      t.url,
      'mutation($slug: String!, $values: JSON!) { saveSigningFormValues(slug: $slug, values: $values) { slug } }',
      { variables: { slug: client.slug, values: { [company]: 'Changed' } } },
    );
    expect(body.errors?.[0]?.message).toBe('Read-only field');
  });

  it('fields change the submission’s copy of the fields', async () => {
    const client = await newClient();
    await put(client.id, {
      fields: [
        { name: 'Full Name', default_value: 'Preset', readonly: true },
        { name: 'company', value: 'Valued', required: true, preferences: { font_size: 14 } },
        { name: 'Code', validation_pattern: '[A-Z]{4}', invalid_message: 'Four capitals' },
      ],
    });
    const form = await formOf(client.slug);
    const byName = Object.fromEntries(form.fields.map((f) => [f.name, f]));
    expect(byName['Full Name']).toMatchObject({ defaultValue: 'Preset', readonly: true });
    expect(byName.Company).toMatchObject({ defaultValue: 'Valued', required: true, preferences: { font_size: 14 } });
    expect(byName.Code).toMatchObject({ validation: { pattern: '[A-Z]{4}', message: 'Four capitals' } });
    await put(client.id, { fields: [{ name: 'Code', validation: { pattern: '\\d+', message: 'Digits' } }] });
    expect(await fieldOf(client.slug, 'Code')).toMatchObject({ validation: { pattern: '\\d+', message: 'Digits' } });
  });

  it('completed true completes now: api_complete_form and the completion pipeline', async () => {
    const client = await newClient();
    const json = await put(client.id, { completed: true, values: ALL_VALUES });
    expect(json).toMatchObject({ status: 'completed', completed_at: expect.any(String) });
    const events = await t.db.submissionEvent.findMany({ where: { submitterId: client.id } });
    expect(events.map((e) => e.eventType)).toContain('api_complete_form');
    await t.app.jobs.waitForIdle();
    const read = await api('GET', `/submitters/${client.id}`);
    expect(read.json.documents).toHaveLength(1);
  });

  it('refuses a completed or declined submitter with DocuSeal’s messages', async () => {
    const done = await newClient();
    await put(done.id, { completed: true, values: ALL_VALUES });
    expect(await api('PUT', `/submitters/${done.id}`, { name: 'Late' })).toEqual({
      status: 422,
      json: { error: 'Submitter has already completed the submission.' },
    });
    const declined = await newClient();
    const { body } = await graphql(
      t.url,
      'mutation($slug: String!) { declineSigningForm(slug: $slug, reason: "No") { slug } }',
      { variables: { slug: declined.slug } },
    );
    expect(body.errors).toBeUndefined();
    expect(await api('PUT', `/submitters/${declined.id}`, { name: 'Late' })).toEqual({
      status: 422,
      json: { error: 'Submitter has already declined the submission.' },
    });
  });
});

describe('go_to_last in the signing page (Chromium)', () => {
  it('opens a returning signer, or one with go_to_last, at the field to resume; false at the top', async () => {
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(PAGE_TIMEOUT_MS);
      const fullName = page.getByRole('textbox', { name: 'Full Name (required)' });
      const company = page.getByRole('textbox', { name: 'Company' });
      // Focusing happens as the fields are mounted, with their values: once a value shows, it has.
      const opened = async (slug: string) => {
        await page.goto(`${t.url}/s/${slug}`);
        await expectInPage(fullName).toHaveValue('Zoë');
      };

      const client = await newClient({ values: { 'Full Name': 'Zoë' } });
      await opened(client.slug); // the first open: at the top
      await expectInPage(company).not.toBeFocused();
      await opened(client.slug); // opened before: after the last field with a value
      await expectInPage(company).toBeFocused();
      await put(client.id, { go_to_last: false });
      await opened(client.slug);
      await expectInPage(company).not.toBeFocused();

      const eager = await newClient({ values: { 'Full Name': 'Zoë' }, metadata: { k: 1 } });
      await put(eager.id, { go_to_last: true });
      await opened(eager.slug);
      await expectInPage(company).toBeFocused();
    } finally {
      await browser.close();
    }
  });
});

describe('GraphQL updateSubmitter', () => {
  const UPDATE = /* GraphQL */ `
    mutation($input: UpdateSubmitterInput!) {
      updateSubmitter(input: $input) { submitter { id name metadata preferences externalId } }
    }
  `;
  const update = (input: Record<string, unknown>) =>
    graphql(t.url, UPDATE, { key: alice.apiKey, variables: { input } });

  it('takes the same properties as the REST route, with the same effects', async () => {
    const client = await newClient({ metadata: { old: true }, values: { Company: 'Acme' } });
    const { body } = await update({
      id: client.id,
      name: 'Graph',
      email: 'Graph@Acme.test',
      externalId: 'g-1',
      values: { full_name: 'Graph Client' },
      completedRedirectUrl: 'https://acme.test/graph',
      metadata: { fresh: 1 },
      goToLast: true,
      readonlyFields: ['Company'],
      requireEmail2fa: false,
      replyTo: 'replies@acme.test',
      message: { subject: 'GraphQL subject', body: 'Body {{submitter.link}}' },
      fields: [{ name: 'Code', validation_pattern: '[0-9]+', invalid_message: 'Numbers' }],
      sendEmail: true,
    });
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    expect(body.data.updateSubmitter.submitter).toMatchObject({
      name: 'Graph',
      externalId: 'g-1',
      metadata: { fresh: 1 },
      preferences: { go_to_last: true, require_email_2fa: false, reply_to: 'replies@acme.test', send_email: true },
    });
    const form = await formOf(client.slug);
    expect(form).toMatchObject({ goToLast: true, completedRedirectUrl: 'https://acme.test/graph' });
    expect(form.fields.find((f) => f.name === 'Full Name')!.defaultValue).toBe('Graph Client');
    expect(form.fields.find((f) => f.name === 'Company')!.readonly).toBe(true);
    expect(form.fields.find((f) => f.name === 'Code')!.validation).toEqual({ pattern: '[0-9]+', message: 'Numbers' });
    await t.app.jobs.waitForIdle();
    expect(mailsTo(client.email)).toEqual([]);
    const [mail] = mailsTo('graph@acme.test');
    expect(mail!.parsed.subject).toBe('GraphQL subject');
    expect(mail!.parsed.replyTo?.text).toBe('replies@acme.test');
  });

  it('refuses 2FA and a finished submitter as REST does', async () => {
    const client = await newClient();
    const refused = await update({ id: client.id, requirePhone2fa: true });
    expect(refused.body.errors?.[0]).toMatchObject({
      message: 'require_phone_2fa is not supported: the signing form has no one-time codes',
      extensions: { code: 'VALIDATION' },
    });
    await update({ id: client.id, completed: true });
    const late = await update({ id: client.id, name: 'Late' });
    expect(late.body.errors?.[0]?.message).toBe('Submitter has already completed the submission.');
  });
});
