/**
 * The signer's form, server side (docs/signing-form.md), through GraphQL with no API key and the
 * public REST routes: opening (view_form with IP and user agent, opened_at, form.viewed once as a
 * persisted dispatch-event job), saving (merge, the three field refusals, start_form once),
 * completing (required, pattern, options, preserved order, the complete_form event, the next
 * party's request, the completion job drawing the uploaded signature), declining, every refusal
 * message, uploads (PNG signature, dangerous extension, blank signature, unknown slug), one
 * signer's slug not reaching another's fields, and two completions at once.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { lockSubmissionAndSubmitter } from '../src/db/queries/signing-form.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { subscribeToEveryEvent } from './helpers/webhook-receiver.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;
let soloTemplateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-signing-form-'));
const UA = 'SigningFormTest/1.0 (vitest)';

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

const FORM = /* GraphQL */ `
  fragment Form on SigningForm {
    slug state message waitingFor accountName completedRedirectUrl
    submitter { id uuid name email role status openedAt completedAt declinedAt }
    submission { id name status order expireAt }
    documents { uuid name url pages { width height } }
    fields { uuid name type required readonly own role value defaultValue validation options { value uuid }
             areas { x y w h page attachmentUuid } attachments { uuid url filename contentType } }
    completedDocuments { name url }
  }
`;

/** POST /graphql with no API key (and a user agent the events should record). */
async function gql(query: string, variables: Record<string, unknown>) {
  const { status, body } = await graphql(t.url, `${query}\n${FORM}`, { variables, headers: { 'user-agent': UA } });
  expect(status).toBe(200);
  return body as { data?: any; errors?: { message: string; extensions?: { code?: string; fieldUuid?: string } }[] };
}
const load = (slug: string) => gql('query Load($slug: String!) { signingForm(slug: $slug) { ...Form } }', { slug });
const open = (slug: string) =>
  gql('mutation Open($slug: String!) { openSigningForm(slug: $slug) { ...Form } }', { slug });
// The signer agreed to sign electronically first, as the page has them do (test/signing-consent.test.ts
// covers the refusals before that).
const save = async (slug: string, values: unknown) => {
  await acceptConsentViaApi(t.url, slug, { 'user-agent': UA });
  return gql(
    'mutation Save($slug: String!, $values: JSON!) { saveSigningFormValues(slug: $slug, values: $values) { ...Form } }',
    { slug, values },
  );
};
const complete = async (slug: string, values?: unknown) => {
  await acceptConsentViaApi(t.url, slug, { 'user-agent': UA });
  return gql(
    'mutation Complete($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { ...Form ' +
      '} }',
    { slug, values },
  );
};
const decline = (slug: string, reason: string) =>
  gql(
    'mutation Decline($slug: String!, $reason: String!) { declineSigningForm(slug: $slug, reason: $reason) { ' +
      '...Form } }',
    { slug, reason },
  );

/** The error of a GraphQL answer that must have failed. */
function failure(body: Awaited<ReturnType<typeof gql>>) {
  expect(body.errors, JSON.stringify(body.data)).toBeDefined();
  return body.errors![0]!;
}

/** POST /api/attachments as the page sends it (multipart, no key). */
async function upload(fields: Record<string, string>, file?: { bytes: Uint8Array; name: string; type: string }) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (file) form.append('file', new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.name);
  const response = await fetch(`${t.url}/api/attachments`, {
    method: 'POST',
    body: form,
    headers: { 'user-agent': UA },
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** A PNG drawn with mupdf: transparent, with a black stroke across unless `blank`. */
async function png(options: { blank?: boolean } = {}): Promise<Uint8Array> {
  const mupdf = await import('mupdf');
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceRGB, [0, 0, 160, 50], true);
  const pixels = pixmap.getPixels();
  pixels.fill(0);
  if (!options.blank) {
    for (let y = 22; y < 28; y += 1) {
      for (let x = 10; x < 150; x += 1) pixels.set([0, 0, 0, 255], y * pixmap.getStride() + x * 4);
    }
  }
  return pixmap.asPNG().slice();
}

interface Party {
  id: number;
  slug: string;
  submission_id: number;
}

async function createSubmission(template = templateId, body: Record<string, unknown> = {}): Promise<Party[]> {
  const submitters =
    template === templateId
      ? [
          { role: 'Client', email: 'cleo@client.test', name: 'Cleo Client' },
          { role: 'Manager', email: 'max@manager.test', name: 'Max Manager' },
        ]
      : [{ role: 'Signer', email: 'solo@signer.test', name: 'Solo' }];
  const { status, json } = await api('POST', '/submissions', { template_id: template, submitters, ...body });
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

const fieldUuid = (form: any, name: string): string => form.fields.find((f: any) => f.name === name).uuid;

const events = (submitterId: number, eventType?: string) =>
  t.db.submissionEvent.findMany({
    where: { submitterId, ...(eventType ? { eventType } : {}) },
    orderBy: { id: 'asc' },
  });

/** The persisted dispatch-event jobs of one event type about one record (src/events/events.ts). */
async function dispatchJobs(type: string, recordId: number): Promise<{ uniqueKey?: string }[]> {
  await t.outboxRelayed();
  const rows = await t.db.$queryRawUnsafe<
    { data: { payload: { type: string; recordId: number }; uniqueKey?: string } }[]
  >(`SELECT data FROM agenda.jobs WHERE name = 'dispatch-event'`);
  return rows.map((r) => r.data).filter((d) => d.payload.type === type && d.payload.recordId === recordId);
}

/** Polls until `check` holds (jobs run in the background; the other helpers' jobs may be pending). */
async function until<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Acme Signing', email: 'alice@signing-form.test' });
  await subscribeToEveryEvent(t.db, alice.accountId);
  const template = await api('POST', '/templates/pdf', {
    name: 'Service agreement',
    documents: [{ name: 'agreement', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Full Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] },
      {
        name: 'Code',
        role: 'Client',
        validation: { pattern: '[A-Z]{3}', message: 'Code must be three capital letters' },
        areas: [{ x: 72, y: 110, w: 80, h: 24, page: 1 }],
      },
      {
        name: 'Plan',
        type: 'radio',
        role: 'Client',
        options: ['Basic', 'Pro'],
        areas: [
          { x: 72, y: 150, w: 20, h: 20, page: 1, option: 'Basic' },
          { x: 110, y: 150, w: 20, h: 20, page: 1, option: 'Pro' },
        ],
      },
      {
        name: 'Phone',
        type: 'phone',
        role: 'Client',
        required: false,
        areas: [{ x: 72, y: 190, w: 150, h: 24, page: 1 }],
      },
      {
        name: 'Notes',
        role: 'Client',
        readonly: true,
        default_value: 'Fixed terms',
        areas: [{ x: 72, y: 230, w: 200, h: 24, page: 1 }],
      },
      {
        name: 'Client Signature',
        type: 'signature',
        role: 'Client',
        areas: [{ x: 72, y: 270, w: 200, h: 50, page: 1 }],
      },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 300, y: 72, w: 200, h: 24, page: 1 }] },
    ],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  templateId = template.json.id;
  const solo = await api('POST', '/templates/pdf', {
    name: 'Receipt',
    documents: [{ name: 'receipt', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Signer Name', role: 'Signer', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  soloTemplateId = solo.json.id;
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('reading and opening the form (no API key)', () => {
  it('loads the form by slug alone and records nothing; an unknown slug is NOT_FOUND', async () => {
    const [client] = await createSubmission();
    const { data, errors } = await load(client.slug);
    expect(errors).toBeUndefined();
    const form = data.signingForm;
    expect(form).toMatchObject({
      slug: client.slug,
      state: 'OPEN',
      message: null,
      waitingFor: null,
      accountName: 'Acme Signing',
    });
    expect(form.submitter).toMatchObject({
      id: client.id,
      name: 'Cleo Client',
      role: 'Client',
      status: 'sent',
      openedAt: null,
    });
    expect(form.submission).toMatchObject({ id: client.submission_id, status: 'pending', order: 'preserved' });
    // The document, its signed URL (which serves the PDF) and its page as displayed, in points.
    expect(form.documents).toHaveLength(1);
    expect(form.documents[0].pages).toEqual([{ width: 612, height: 792 }]);
    const pdf = await fetch(form.documents[0].url);
    expect(pdf.status).toBe(200);
    expect(
      Buffer.from(await pdf.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
    // Own fields only (the manager has completed nothing), areas on that document.
    expect(form.fields.map((f: any) => f.name)).toEqual([
      'Full Name',
      'Code',
      'Plan',
      'Phone',
      'Notes',
      'Client Signature',
    ]);
    expect(form.fields.every((f: any) => f.own && f.role === 'Client')).toBe(true);
    expect(form.fields.find((f: any) => f.name === 'Notes')).toMatchObject({ readonly: true, value: 'Fixed terms' });
    expect(form.fields.find((f: any) => f.name === 'Plan').options.map((o: any) => o.value)).toEqual(['Basic', 'Pro']);
    expect(form.fields[0].areas[0].attachmentUuid).toBe(form.documents[0].uuid);
    expect(await events(client.id, 'view_form')).toHaveLength(0);

    const unknown = failure(await load('no-such-slug'));
    expect(unknown.extensions?.code).toBe('NOT_FOUND');
  });

  it('open: a view_form event with IP and user agent each time, opened_at every time, form.viewed once', async () => {
    const [client] = await createSubmission();
    const first = await open(client.slug);
    expect(first.errors).toBeUndefined();
    const openedFirst = first.data.openSigningForm.submitter.openedAt;
    expect(openedFirst).toBeTruthy();
    expect(first.data.openSigningForm.submitter.status).toBe('opened');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await open(client.slug);
    expect(second.data.openSigningForm.submitter.openedAt > openedFirst).toBe(true);

    const views = await events(client.id, 'view_form');
    expect(views).toHaveLength(2);
    for (const view of views) expect(view.data).toEqual({ ip: '127.0.0.1', ua: UA });
    const row = await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } });
    expect(row.openedAt?.toISOString()).toBe(second.data.openSigningForm.submitter.openedAt);
    // One persisted dispatch-event job for form.viewed, keyed to the submitter.
    expect(await dispatchJobs('form.viewed', client.id)).toEqual([
      expect.objectContaining({ uniqueKey: `form.viewed:${client.id}` }),
    ]);
  });

  it('POST /api/submitter_form_views {submitter_slug} does what openSigningForm does, without a key', async () => {
    const [client] = await createSubmission();
    const response = await fetch(`${t.url}/api/submitter_form_views`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': UA },
      body: JSON.stringify({ submitter_slug: client.slug }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({});
    expect((await events(client.id, 'view_form')).map((e) => e.data)).toEqual([{ ip: '127.0.0.1', ua: UA }]);
    expect(await dispatchJobs('form.viewed', client.id)).toHaveLength(1);

    const unknown = await fetch(`${t.url}/api/submitter_form_views`, {
      method: 'POST',
      body: JSON.stringify({ submitter_slug: 'nope' }),
    });
    expect(unknown.status).toBe(404);
    const missing = await fetch(`${t.url}/api/submitter_form_views`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
  });
});

describe('saving values', () => {
  it('merges values; start_form and form.started once; opened_at set by the first save', async () => {
    const [client] = await createSubmission();
    const form = (await load(client.slug)).data.signingForm;
    const first = await save(client.slug, { [fieldUuid(form, 'Full Name')]: 'Cleo Client' });
    expect(first.errors).toBeUndefined();
    const second = await save(client.slug, { [fieldUuid(form, 'Code')]: 'ab' });
    expect(second.errors).toBeUndefined();
    const saved = await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } });
    expect(saved.values).toEqual({ [fieldUuid(form, 'Full Name')]: 'Cleo Client', [fieldUuid(form, 'Code')]: 'ab' });
    expect(saved.openedAt).not.toBeNull();
    expect(saved.startedAt).not.toBeNull();
    const fields = second.data.saveSigningFormValues.fields;
    expect(fields.find((f: any) => f.name === 'Full Name').value).toBe('Cleo Client');
    // A null clears a value.
    await save(client.slug, { [fieldUuid(form, 'Code')]: null });
    expect((await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } })).values).toEqual({
      [fieldUuid(form, 'Full Name')]: 'Cleo Client',
    });

    const starts = await events(client.id, 'start_form');
    expect(starts).toHaveLength(1);
    expect(starts[0]!.data).toEqual({ ip: '127.0.0.1', ua: UA });
    expect(await dispatchJobs('form.started', client.id)).toEqual([
      expect.objectContaining({ uniqueKey: `form.started:${client.id}` }),
    ]);
  });

  it(
    'refuses an unknown field, another party’s field and a readonly one, naming the field; ' + 'writes nothing',
    async () => {
      const [client, manager] = await createSubmission();
      const form = (await load(client.slug)).data.signingForm;
      const managerForm = (await load(manager.slug)).data.signingForm;
      const unknownUuid = '00000000-0000-4000-8000-000000000000';

      const missing = failure(await save(client.slug, { [unknownUuid]: 'x' }));
      expect(missing).toMatchObject({
        message: 'Missing field',
        extensions: { code: 'VALIDATION', fieldUuid: unknownUuid },
      });
      const invalid = failure(await save(client.slug, { [fieldUuid(managerForm, 'Manager Name')]: 'Mallory' }));
      expect(invalid).toMatchObject({
        message: 'Invalid field',
        extensions: { fieldUuid: fieldUuid(managerForm, 'Manager Name') },
      });
      const readonly = failure(
        await save(client.slug, { [fieldUuid(form, 'Full Name')]: 'ok', [fieldUuid(form, 'Notes')]: 'changed' }),
      );
      expect(readonly).toMatchObject({
        message: 'Read-only field',
        extensions: { fieldUuid: fieldUuid(form, 'Notes') },
      });
      const notObject = failure(await save(client.slug, ['x']));
      expect(notObject.extensions?.code).toBe('VALIDATION');

      const row = await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } });
      expect(row.values).toEqual({});
      expect(row.startedAt).toBeNull();
      expect(await events(client.id, 'start_form')).toHaveLength(0);
    },
  );

  it('one signer’s slug neither reads nor writes another’s fields', async () => {
    const [client, manager] = await createSubmission();
    const clientForm = (await load(client.slug)).data.signingForm;
    await save(client.slug, { [fieldUuid(clientForm, 'Full Name')]: 'Secret Name' });

    const managerForm = (await load(manager.slug)).data.signingForm;
    expect(managerForm.fields.map((f: any) => f.name)).toEqual(['Manager Name']);
    expect(JSON.stringify(managerForm)).not.toContain('Secret Name');
    const write = failure(await save(manager.slug, { [fieldUuid(clientForm, 'Full Name')]: 'Overwritten' }));
    expect(write.message).toBe('Invalid field');
    expect(
      ((await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } })).values as any)[
        fieldUuid(clientForm, 'Full Name')
      ],
    ).toBe('Secret Name');
  });
});

describe('uploads (POST /api/attachments, multipart, no key)', () => {
  it('stores a PNG signature and answers DocuSeal’s body; the file is served at its URL', async () => {
    const [client] = await createSubmission();
    const bytes = await png();
    const { status, json } = await upload(
      { submitter_slug: client.slug, type: 'signature' },
      { bytes, name: 'signature.png', type: 'image/png' },
    );
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      created_at: expect.any(String),
      url: expect.stringContaining('/file/'),
      filename: 'signature.png',
      content_type: 'image/png',
    });
    const served = await fetch(json.url);
    expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    const stored = await t.db.storedFile.findUniqueOrThrow({ where: { uuid: json.uuid } });
    expect(stored.accountId).toBe(alice.accountId);
    expect(stored.submitterId).toBe(client.id);
    expect(stored.metadata).toMatchObject({ type: 'signature' });
  });

  it('refuses a dangerous extension, a blank signature, a missing file and an unknown slug', async () => {
    const [client] = await createSubmission();
    const exe = await upload(
      { submitter_slug: client.slug, type: 'file' },
      { bytes: Buffer.from('MZ\x90\x00'), name: 'setup.EXE', type: 'application/octet-stream' },
    );
    expect(exe).toEqual({ status: 422, json: { error: "File type '.exe' is not allowed." } });
    // Windows drops trailing dots and spaces: "setup.exe. " is an .exe; a disk image is refused too.
    for (const name of ['setup.exe. ', 'setup.exe..', 'disk.ISO']) {
      const sneaky = await upload(
        { submitter_slug: client.slug, type: 'file' },
        { bytes: Buffer.from('MZ\x90\x00'), name, type: 'application/octet-stream' },
      );
      expect(sneaky.status, name).toBe(422);
      expect(sneaky.json.error, name).toMatch(/^File type '\.(exe|iso)' is not allowed\.$/);
    }
    const blank = await upload(
      { submitter_slug: client.slug, type: 'signature' },
      { bytes: await png({ blank: true }), name: 'signature.png', type: 'image/png' },
    );
    expect(blank).toEqual({ status: 422, json: { error: 'signature is empty' } });
    const garbage = await upload(
      { submitter_slug: client.slug, type: 'initials' },
      { bytes: Buffer.from('not an image at all'), name: 'initials.png', type: 'image/png' },
    );
    expect(garbage).toEqual({ status: 422, json: { error: 'signature error, try to sign on another device' } });
    const noFile = await upload({ submitter_slug: client.slug, type: 'file' });
    expect(noFile).toEqual({ status: 422, json: { error: 'file is required' } });
    const unknown = await upload(
      { submitter_slug: 'no-such-slug', type: 'signature' },
      { bytes: await png(), name: 's.png', type: 'image/png' },
    );
    expect(unknown.status).toBe(404);
    const json = await fetch(`${t.url}/api/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ submitter_slug: client.slug }),
    });
    expect(json.status).toBe(422);
    expect(await t.db.storedFile.count({ where: { submitterId: client.id } })).toBe(0);
  });

  it('an upload is usable by its own signer only, and a signature must be uploaded as one', async () => {
    const [client, manager] = await createSubmission();
    const form = (await load(client.slug)).data.signingForm;
    const managers = await upload(
      { submitter_slug: manager.slug, type: 'signature' },
      { bytes: await png(), name: 's.png', type: 'image/png' },
    );
    const stolen = failure(await save(client.slug, { [fieldUuid(form, 'Client Signature')]: managers.json.uuid }));
    expect(stolen).toMatchObject({
      message: `Unknown attachment ${managers.json.uuid}`,
      extensions: { fieldUuid: fieldUuid(form, 'Client Signature') },
    });
    const plain = await upload(
      { submitter_slug: client.slug, type: 'file' },
      { bytes: await png({ blank: true }), name: 'blank.png', type: 'image/png' },
    );
    expect(plain.status).toBe(200);
    const unchecked = failure(await save(client.slug, { [fieldUuid(form, 'Client Signature')]: plain.json.uuid }));
    expect(unchecked.message).toContain('must be uploaded as a signature');
  });
});

describe('completing', () => {
  it('checks required fields, patterns, options and phone numbers on the server, naming the field', async () => {
    const [client] = await createSubmission();
    const form = (await load(client.slug)).data.signingForm;
    // Each refused completion writes nothing, so each call sends everything so far.
    const values: Record<string, unknown> = { [fieldUuid(form, 'Full Name')]: 'Cleo Client' };
    const required = failure(await complete(client.slug, values));
    expect(required).toMatchObject({
      message: 'Code is required',
      extensions: { code: 'VALIDATION', fieldUuid: fieldUuid(form, 'Code') },
    });

    values[fieldUuid(form, 'Code')] = 'abc';
    const pattern = failure(await complete(client.slug, values));
    expect(pattern).toMatchObject({
      message: 'Code must be three capital letters',
      extensions: { fieldUuid: fieldUuid(form, 'Code') },
    });

    values[fieldUuid(form, 'Code')] = 'ABC';
    values[fieldUuid(form, 'Plan')] = 'Platinum';
    const option = failure(await complete(client.slug, values));
    expect(option).toMatchObject({ extensions: { fieldUuid: fieldUuid(form, 'Plan') } });
    expect(option.message).toBe('Plan is invalid: "Platinum" is not one of its options');

    values[fieldUuid(form, 'Plan')] = 'Pro';
    values[fieldUuid(form, 'Phone')] = '12345';
    const phone = failure(await complete(client.slug, values));
    expect(phone).toMatchObject({ extensions: { fieldUuid: fieldUuid(form, 'Phone') } });
    expect(phone.message).toContain('Phone is invalid');

    values[fieldUuid(form, 'Phone')] = null;
    const signature = failure(await complete(client.slug, values));
    expect(signature).toMatchObject({
      message: 'Client Signature is required',
      extensions: { fieldUuid: fieldUuid(form, 'Client Signature') },
    });

    // Refused completions wrote nothing: not completed, no complete_form (the values saved by earlier saves only).
    const row = await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } });
    expect(row.completedAt).toBeNull();
    expect(row.values).toEqual({});
    expect(await events(client.id, 'complete_form')).toHaveLength(0);
  });

  it('preserved order: the second party waits for the first', async () => {
    const [client, manager] = await createSubmission();
    const managerForm = (await load(manager.slug)).data.signingForm;
    expect(managerForm.waitingFor).toBe('Client');
    const refused = failure(await complete(manager.slug, { [fieldUuid(managerForm, 'Manager Name')]: 'Max' }));
    expect(refused).toMatchObject({
      message: 'Waiting for Client to complete the form.',
      extensions: { code: 'VALIDATION' },
    });
    expect((await t.db.submitter.findUniqueOrThrow({ where: { id: manager.id } })).completedAt).toBeNull();
    expect(client.id).toBeLessThan(manager.id);
  });

  it(
    'completes with a drawn signature: complete_form, the next party’s request, ' + 'documents with the image',
    async () => {
      const [client, manager] = await createSubmission();
      const form = (await open(client.slug)).data.openSigningForm;
      const signature = await upload(
        { submitter_slug: client.slug, type: 'signature' },
        { bytes: await png(), name: 'signature.png', type: 'image/png' },
      );
      expect(signature.status).toBe(200);
      const saved = await save(client.slug, { [fieldUuid(form, 'Client Signature')]: signature.json.uuid });
      const shown = saved.data.saveSigningFormValues.fields.find((f: any) => f.name === 'Client Signature');
      expect(shown.attachments).toEqual([
        expect.objectContaining({ uuid: signature.json.uuid, contentType: 'image/png' }),
      ]);
      // The manager has not been asked yet (preserved order).
      expect(await t.db.emailMessage.count({ where: { submitterId: manager.id } })).toBe(0);

      const done = await complete(client.slug, {
        [fieldUuid(form, 'Full Name')]: 'Cleo Client',
        [fieldUuid(form, 'Code')]: 'ABC',
        [fieldUuid(form, 'Plan')]: 'Pro',
        [fieldUuid(form, 'Phone')]: '+44 20 7946 0958',
      });
      expect(done.errors).toBeUndefined();
      expect(done.data.completeSigningForm).toMatchObject({
        state: 'COMPLETED',
        message: 'Form has been completed already.',
      });
      expect(done.data.completeSigningForm.submitter.status).toBe('completed');

      const row = await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } });
      expect(row.completedAt).not.toBeNull();
      expect(row).toMatchObject({ ip: '127.0.0.1', ua: UA });
      // Phones are stored in E.164; the readonly default is kept with the values.
      expect(row.values).toMatchObject({
        [fieldUuid(form, 'Phone')]: '+442079460958',
        [fieldUuid(form, 'Notes')]: 'Fixed terms',
      });
      const completeEvents = await events(client.id, 'complete_form');
      expect(completeEvents.map((e) => e.data)).toEqual([{ ip: '127.0.0.1', ua: UA }]);
      expect(await t.db.submission.findUniqueOrThrow({ where: { id: client.submission_id } })).toMatchObject({
        completedAt: null,
      });

      // The next party in order gets its request.
      const mail = await until('the manager’s request', () =>
        t.db.emailMessage.findFirst({ where: { submitterId: manager.id, kind: 'signature_request', status: 'sent' } }),
      );
      expect(mail.to).toEqual(['max@manager.test']);
      expect(mail.textBody).toContain(`/s/${manager.slug}`);

      // The completion job draws the client's values: the signature image is in its document.
      const documents = await until('the client’s documents', async () => {
        const rows = await t.db.completedDocument.findMany({
          where: { submitterId: client.id, kind: 'document' },
          include: { file: true },
        });
        return rows.length > 0 ? rows : undefined;
      });
      const file = path.join(tmp, `client-${client.id}.pdf`);
      fs.writeFileSync(file, await t.app.files.storage.read(documents[0]!.file.storageKey));
      const images = execFileSync('pdfimages', ['-list', file]).toString().trim().split('\n').slice(2);
      expect(images.filter((line) => /\bimage\b/.test(line)).length).toBeGreaterThanOrEqual(1);
      expect(execFileSync('pdftotext', [file, '-']).toString()).toContain('Cleo Client');

      // The manager now sees the client's completed values, read-only, and may complete.
      const managerForm = (await load(manager.slug)).data.signingForm;
      expect(managerForm.waitingFor).toBeNull();
      const clientName = managerForm.fields.find((f: any) => f.name === 'Full Name');
      expect(clientName).toMatchObject({ own: false, readonly: true, value: 'Cleo Client', role: 'Client' });
      const last = await complete(manager.slug, { [fieldUuid(managerForm, 'Manager Name')]: 'Max Manager' });
      expect(last.errors).toBeUndefined();
      expect(last.data.completeSigningForm.submission.status).toBe('completed');
      const completed = await until('the completed submission’s documents', async () => {
        const answer = (await load(manager.slug)).data.signingForm;
        return answer.completedDocuments.length > 0 ? answer : undefined;
      });
      expect(completed.completedDocuments[0].url).toContain('/file/');
    },
  );

  it('two completions at once: exactly one succeeds', async () => {
    const [solo] = await createSubmission(soloTemplateId);
    const form = (await load(solo.slug)).data.signingForm;
    const values = { [fieldUuid(form, 'Signer Name')]: 'Solo' };
    const answers = await Promise.all([
      complete(solo.slug, values),
      complete(solo.slug, values),
      complete(solo.slug, values),
    ]);
    const succeeded = answers.filter((a) => !a.errors);
    expect(succeeded).toHaveLength(1);
    for (const refused of answers.filter((a) => a.errors))
      expect(refused.errors![0]!.message).toBe('Form has been completed already.');
    expect(await events(solo.id, 'complete_form')).toHaveLength(1);
  });
});

describe('declining and refusals', () => {
  it('declines with a reason: declined_at, decline_reason, decline_form {reason, ip, ua}, form.declined', async () => {
    const [client] = await createSubmission();
    const answer = await decline(client.slug, '  Wrong company name  ');
    expect(answer.errors).toBeUndefined();
    expect(answer.data.declineSigningForm).toMatchObject({ state: 'DECLINED', message: 'Form has been declined.' });
    const row = await t.db.submitter.findUniqueOrThrow({ where: { id: client.id } });
    expect(row.declinedAt).not.toBeNull();
    expect(row.declineReason).toBe('Wrong company name');
    expect((await events(client.id, 'decline_form')).map((e) => e.data)).toEqual([
      { reason: 'Wrong company name', ip: '127.0.0.1', ua: UA },
    ]);
    expect(await dispatchJobs('form.declined', client.id)).toHaveLength(1);
  });

  it(
    'every change is refused with DocuSeal’s message once the form is declined, completed, ' + 'archived or expired',
    async () => {
      const check = async (slug: string, message: string) => {
        const form = (await load(slug)).data.signingForm;
        expect(form.message).toBe(message);
        const uuid = form.fields.find((f: any) => f.own && !f.readonly)?.uuid ?? '00000000-0000-4000-8000-000000000000';
        expect(failure(await save(slug, { [uuid]: 'x' })).message).toBe(message);
        expect(failure(await complete(slug)).message).toBe(message);
        expect(failure(await decline(slug, 'no')).message).toBe(message);
        // Opening records nothing then.
        const before = await t.db.submissionEvent.count({ where: { eventType: 'view_form' } });
        expect((await open(slug)).data.openSigningForm.message).toBe(message);
        expect(await t.db.submissionEvent.count({ where: { eventType: 'view_form' } })).toBe(before);
        // Uploads get DocuSeal's one message for all of these.
        const uploaded = await upload(
          { submitter_slug: slug, type: 'signature' },
          { bytes: await png(), name: 's.png', type: 'image/png' },
        );
        expect(uploaded).toEqual({ status: 422, json: { error: 'Form has been archived.' } });
      };

      const [declined, other] = await createSubmission();
      const declinedAnswer = await decline(declined.slug, 'no thanks');
      expect(declinedAnswer.errors, JSON.stringify(declinedAnswer.errors)).toBeUndefined();
      await check(declined.slug, 'Form has been declined.');
      await check(other.slug, 'Form has been declined.');

      const [solo] = await createSubmission(soloTemplateId);
      const soloForm = (await load(solo.slug)).data.signingForm;
      expect((await complete(solo.slug, { [fieldUuid(soloForm, 'Signer Name')]: 'Solo' })).errors).toBeUndefined();
      await check(solo.slug, 'Form has been completed already.');

      const [archived] = await createSubmission();
      expect((await api('DELETE', `/submissions/${archived.submission_id}`)).status).toBe(200);
      await check(archived.slug, 'Form has been archived.');

      const [expired] = await createSubmission();
      const put = await api('PUT', `/submissions/${expired.submission_id}`, { expire_at: '2020-01-01T00:00:00Z' });
      expect(put.status, JSON.stringify(put.json)).toBe(200);
      await check(expired.slug, 'Form has been expired.');
      expect((await load(expired.slug)).data.signingForm.state).toBe('EXPIRED');
    },
  );
});

describe('fields the signer does not fill', () => {
  it(
    'a required stamp (always readonly) does not block completion; ' +
      'a multiple value prefilled as a list loads and completes',
    async () => {
      const created = await api('POST', '/templates/pdf', {
        name: 'Stamp and toppings',
        documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
        fields: [
          { name: 'Seal', type: 'stamp', role: 'Signer', areas: [{ x: 72, y: 72, w: 120, h: 60, page: 1 }] },
          {
            name: 'Toppings',
            type: 'multiple',
            role: 'Signer',
            options: ['Egg', 'Ham'],
            areas: [{ x: 72, y: 200, w: 120, h: 24, page: 1 }],
          },
        ],
      });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      const seal = created.json.fields.find((f: { name: string }) => f.name === 'Seal');
      expect(seal.required).toBe(true);
      const [signer] = await createSubmission(created.json.id, {
        submitters: [{ role: 'Signer', email: 'stamp@signer.test', values: { Toppings: ['Egg'] } }],
      });
      const form = await load(signer!.slug);
      expect(form.errors).toBeUndefined();
      expect(form.data.signingForm.fields.find((f: { name: string }) => f.name === 'Toppings').value).toEqual(['Egg']);
      const done = await complete(signer!.slug);
      expect(done.errors).toBeUndefined();
      expect(done.data.completeSigningForm.state).toBe('COMPLETED');
    },
  );
});

describe('row locks of a form operation', () => {
  it('let another party’s event be recorded meanwhile: no deadlock with the audit chain', async () => {
    // A form operation (lockSignerForm) holds the submission's and its signer's rows while another
    // party's event is inserted (as a signature request job's statement does): that insert's chain
    // trigger takes the submission's advisory lock, then its foreign-key check wants the submission
    // row. The operation then records its own event, which wants that advisory lock. With FOR UPDATE
    // the two waited for each other and PostgreSQL aborted one ("deadlock detected"). No email, so
    // that no request job takes part.
    const [client, manager] = await createSubmission(templateId, { send_email: false });
    const event = (submitterId: number, eventType: string) => ({
      accountId: alice.accountId,
      submissionId: client.submission_id,
      submitterId,
      eventType,
    });
    let other: Promise<unknown> | undefined;
    await t.db.$transaction(async (tx) => {
      await lockSubmissionAndSubmitter(tx, { submissionId: client.submission_id, submitterId: client.id });
      // .then() sends it now (a Prisma query runs when awaited).
      other = t.db.submissionEvent.create({ data: event(manager.id, 'send_email') }).then((row) => row);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await tx.submissionEvent.create({ data: event(client.id, 'decline_form') });
    });
    await other;
    const recorded = await t.db.submissionEvent.findMany({
      where: { submissionId: client.submission_id },
      select: { eventType: true, submitterId: true },
      orderBy: { chainSeq: 'asc' },
    });
    expect(recorded.slice(-2)).toEqual([
      { eventType: 'send_email', submitterId: manager.id },
      { eventType: 'decline_form', submitterId: client.id },
    ]);
  });
});
