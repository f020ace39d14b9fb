/**
 * Every operation of DocuSeal's OpenAPI document (reference/docuseal-openapi.json), called on a
 * real server with realistic data, each answer validated against that operation's 200 schema
 * (test/helpers/openapi.ts openApiErrors): templates from a PDF, from HTML and from a DOCX (local
 * Chromium and LibreOffice), merged, cloned, their documents replaced, changed and archived;
 * submissions made (POST /submissions, /submissions/emails, and the one-off /submissions/pdf,
 * /submissions/html, /submissions/docx), signed in the form until completed (signed documents,
 * audit log), declined, expired, read one by one and listed with each filter, changed and
 * archived; submitters listed, read and changed; a submission's documents.
 *
 * The last test checks that each operation of the document was called and validated at least
 * once, so an operation added to the document, or a call dropped here, fails.
 *
 * What the schemas' types are not held to, because DocuSeal sends the same (docs/compatibility.md
 * §5.4 "OpenAPI schemas"): a `value` in a submitter's `values` is null for a field the party left
 * empty once it completed (Submitters::SerializeForWebhook.build_values_array; the schema says
 * string); `expire_at` of a one-off answer is null when none was given (the schema says string;
 * DocuSeal's own example answers null); in GET /submitters, `email` is null for a party known by
 * phone or name only (DocuSeal's column is nullable; that one schema says string). validate()
 * drops exactly those errors, where the value is null.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { strokePng } from './helpers/images.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, drawPdf, fixturePdf } from './helpers/pdfs.ts';
import { ROOT } from './helpers/processes.ts';

let t: TestApp;
let alice: CreatedAccount;

const OPENAPI = JSON.parse(
  fs.readFileSync(path.join(ROOT, '..', 'shared', 'reference', 'docuseal-openapi.json'), 'utf8'),
) as { paths: Record<string, Record<string, unknown>> };

/** Every operation of the document, as "METHOD /path". */
const OPERATIONS = Object.entries(OPENAPI.paths).flatMap(([route, methods]) =>
  Object.keys(methods)
    .filter((m) => ['get', 'post', 'put', 'delete', 'patch'].includes(m))
    .map((m) => `${m.toUpperCase()} ${route}`),
);

/** Operations whose answer was validated, with how many answers. */
const validated = new Map<string, number>();

/** The value at a JSON pointer of the answer (instancePath of an ajv error). */
function at(json: unknown, pointer: string): unknown {
  let value = json;
  for (const key of pointer.split('/').slice(1)) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}

/**
 * Errors DocuSeal's own answers have too (module comment): a null `values[].value`, a null
 * one-off `expire_at`, and a null `email` of a party known by phone or name only in GET /submitters
 * (that list's schema says string; GET /submitters/{id} and the submission shapes allow null).
 */
const TOLERATED: { operation?: string; pointer: RegExp }[] = [
  { pointer: /\/values\/\d+\/value$/ },
  { pointer: /^\/expire_at$/ },
  { operation: 'GET /submitters', pointer: /^\/data\/\d+\/email$/ },
];

/**
 * Validates an answer against the 200 schema of `METHOD /path` (the OpenAPI path, e.g.
 * "/templates/{id}") and records the operation as covered.
 */
function validate(operation: string, json: unknown): void {
  const [method, route] = operation.split(' ') as [string, string];
  const errors = openApiErrors(method, route, json).filter((error) => {
    const pointer = error.split(' ')[0]!;
    const tolerated = TOLERATED.some((t) => (t.operation ?? operation) === operation && t.pointer.test(pointer));
    return !(tolerated && at(json, pointer) === null);
  });
  expect(errors, `${operation}: ${JSON.stringify(json).slice(0, 2000)}`).toEqual([]);
  validated.set(operation, (validated.get(operation) ?? 0) + 1);
}

/** A REST call that must answer 200; its answer validated as `operation`. */
async function call(operation: string, method: string, url: string, body?: unknown): Promise<any> {
  const { status, json } = await rest(t.url, alice.apiKey, method, url, body);
  expect(status, `${method} ${url}: ${JSON.stringify(json)}`).toBe(200);
  validate(operation, json);
  return json;
}

beforeAll(async () => {
  t = await startTestApp();
  // A user with a first name and no last name, as `signet account create` may make one: DocuSeal's
  // schemas want strings for both (template author, created_by_user).
  alice = await createAccount(t.db, { name: 'OpenAPI Ltd', email: 'alice@openapi.test', firstName: 'Alice' });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** A two-party contract: text, date, number, checkbox, radio, select, multiple, phone, signature, initials, file. */
const contractFields = [
  { name: 'Full Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] },
  { name: 'Start', type: 'date', role: 'Client', areas: [{ x: 300, y: 72, w: 120, h: 24, page: 1 }] },
  { name: 'Seats', type: 'number', role: 'Client', areas: [{ x: 72, y: 110, w: 80, h: 24, page: 1 }] },
  {
    name: 'Agree',
    type: 'checkbox',
    role: 'Client',
    required: false,
    areas: [{ x: 72, y: 150, w: 16, h: 16, page: 1 }],
  },
  {
    name: 'Plan',
    type: 'radio',
    role: 'Client',
    options: ['Basic', 'Pro'],
    areas: [
      { x: 72, y: 180, w: 16, h: 16, page: 1, option: 'Basic' },
      { x: 110, y: 180, w: 16, h: 16, page: 1, option: 'Pro' },
    ],
  },
  {
    name: 'Region',
    type: 'select',
    role: 'Client',
    options: ['EU', 'US'],
    areas: [{ x: 72, y: 210, w: 100, h: 20, page: 1 }],
  },
  {
    name: 'Extras',
    type: 'multiple',
    role: 'Client',
    required: false,
    options: ['Support', 'Training'],
    areas: [{ x: 200, y: 210, w: 120, h: 20, page: 1 }],
  },
  { name: 'Phone', type: 'phone', role: 'Client', required: false, areas: [{ x: 72, y: 240, w: 140, h: 20, page: 1 }] },
  { name: 'Notes', role: 'Client', required: false, areas: [{ x: 72, y: 270, w: 200, h: 24, page: 1 }] },
  { name: 'Client Sign', type: 'signature', role: 'Client', areas: [{ x: 72, y: 320, w: 200, h: 50, page: 1 }] },
  { name: 'Client Initials', type: 'initials', role: 'Client', areas: [{ x: 300, y: 320, w: 60, h: 30, page: 1 }] },
  { name: 'Annex', type: 'file', role: 'Client', required: false, areas: [{ x: 72, y: 400, w: 150, h: 24, page: 1 }] },
  { name: 'Manager Name', role: 'Manager', areas: [{ x: 300, y: 450, w: 200, h: 24, page: 1 }] },
  { name: 'Manager Sign', type: 'signature', role: 'Manager', areas: [{ x: 300, y: 490, w: 200, h: 50, page: 1 }] },
];

const form = async (query: string, variables: Record<string, unknown>) => {
  const { body } = await graphql(t.url, query, { variables, headers: { 'user-agent': 'OpenApiTest/1.0' } });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
};

/** Uploads an image or file for a signer (POST /api/attachments) and returns its uuid. */
async function upload(slug: string, type: string, file: Blob, filename: string): Promise<string> {
  const body = new FormData();
  body.append('submitter_slug', slug);
  body.append('type', type);
  body.append('file', file, filename);
  const response = await fetch(`${t.url}/api/attachments`, { method: 'POST', body });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return JSON.parse(text).uuid;
}

/** Opens and completes a party's form with `values` keyed by field name. */
async function sign(slug: string, template: { fields: { name: string; uuid: string }[] }, values: object) {
  await form('mutation ($slug: String!) { openSigningForm(slug: $slug) { slug } }', { slug });
  const byUuid: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values))
    byUuid[template.fields.find((f) => f.name === name)!.uuid] = value;
  await acceptConsentViaApi(t.url, slug);
  await form(
    'mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { slug } }',
    {
      slug,
      values: byUuid,
    },
  );
}

/** Waits until the jobs due (emails, completion: signed documents, audit log) have run. */
async function settle() {
  await t.outboxRelayed(30_000);
  await t.jobs.waitForIdle({ timeoutMs: 120_000 });
}

let contract: any;
let htmlTemplate: any;
let docxTemplate: any;

describe('templates', { timeout: 300_000 }, () => {
  it('POST /templates/pdf, /templates/html, /templates/docx make templates', async () => {
    contract = await call('POST /templates/pdf', 'POST', '/templates/pdf', {
      name: 'Service contract',
      folder_name: 'Contracts / 2026',
      external_id: 'contract-1',
      documents: [{ name: 'contract', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: contractFields,
    });
    htmlTemplate = await call('POST /templates/html', 'POST', '/templates/html', {
      name: 'HTML consent',
      html:
        '<p style="font: 14px sans-serif">I agree: <checkbox-field name="Consent" role="Patient" ' +
        'style="width: 16px; height: 16px; display: inline-block"></checkbox-field></p>' +
        '<p>Sign: <signature-field name="Patient Sign" role="Patient" ' +
        'style="width: 200px; height: 50px; display: inline-block"></signature-field></p>',
      html_header: '<div style="font-size: 9px">Clinic</div>',
      size: 'A4',
    });
    docxTemplate = await call('POST /templates/docx', 'POST', '/templates/docx', {
      name: 'DOCX lease',
      documents: [
        {
          name: 'lease',
          file: makeDocx([
            { paragraph: 'Lease between the parties.' },
            { table: [['Tenant', '{{Tenant Name;role=Tenant}}']] },
            { paragraph: 'Signed: {{Tenant Sign;type=signature;role=Tenant}}' },
          ]).toString('base64'),
        },
      ],
    });
    expect(docxTemplate.fields.map((f: { name: string }) => f.name)).toEqual(['Tenant Name', 'Tenant Sign']);
  });

  it('POST /templates/merge, /templates/{id}/clone and PUT /templates/{id}/documents', async () => {
    const merged = await call('POST /templates/merge', 'POST', '/templates/merge', {
      template_ids: [htmlTemplate.id, docxTemplate.id],
      name: 'Consent and lease',
      folder_name: 'Merged',
      roles: ['Patient', 'Tenant'],
    });
    expect(merged.schema).toHaveLength(2);
    const clone = await call('POST /templates/{id}/clone', 'POST', `/templates/${contract.id}/clone`, {
      name: 'Service contract (copy)',
      external_id: 'contract-copy',
    });
    const page = base64(
      await drawPdf([{ texts: [{ text: 'Annex {{Annex Note;role=Client;required=false}}', x: 72, y: 72 }] }]),
    );
    const documents = await call('PUT /templates/{id}/documents', 'PUT', `/templates/${clone.id}/documents`, {
      documents: [{ name: 'annex', file: page }],
    });
    expect(documents.schema).toHaveLength(2);
    const replaced = await call('PUT /templates/{id}/documents', 'PUT', `/templates/${clone.id}/documents`, {
      documents: [{ name: 'annex v2', file: page, replace: true, position: 1 }],
    });
    expect(replaced.schema).toHaveLength(2);
  });

  it('GET /templates with each filter, GET, PUT and DELETE /templates/{id}', async () => {
    const one = await call('GET /templates/{id}', 'GET', `/templates/${contract.id}`);
    expect(one.author).toMatchObject({ first_name: 'Alice', last_name: '' });
    for (const query of [
      '',
      '?limit=2',
      `?limit=1&after=${contract.id}`,
      `?before=${docxTemplate.id}`,
      '?q=contract',
      `?slug=${contract.slug}`,
      '?external_id=contract-1',
      '?application_key=contract-1',
      `?folder=${encodeURIComponent('Contracts / 2026')}`,
      '?shared=true',
    ])
      await call('GET /templates', 'GET', `/templates${query}`);
    await call('PUT /templates/{id}', 'PUT', `/templates/${contract.id}`, {
      name: 'Service contract',
      folder_name: 'Contracts / 2026',
      roles: ['Client', 'Manager'],
    });
    const archived = await call('DELETE /templates/{id}', 'DELETE', `/templates/${docxTemplate.id}`);
    expect(archived.archived_at).toEqual(expect.any(String));
    const listed = await call('GET /templates', 'GET', '/templates?archived=true');
    expect(listed.data.map((x: { id: number }) => x.id)).toContain(docxTemplate.id);
  });
});

let completed: any[];
let declined: any[];
let pending: any[];

describe('submissions and submitters', { timeout: 600_000 }, () => {
  it('POST /submissions and /submissions/emails; the parties sign, decline or wait', async () => {
    const parties = (n: number) => [
      {
        role: 'Client',
        email: `client${n}@openapi.test`,
        name: `Client ${n}`,
        phone: '+14155550100',
        external_id: `client-${n}`,
        metadata: { crm: n },
        values: { 'Full Name': `Client ${n}`, Seats: 3 },
      },
      { role: 'Manager', email: `manager${n}@openapi.test`, name: `Manager ${n}` },
    ];
    completed = await call('POST /submissions', 'POST', '/submissions', {
      template_id: contract.id,
      name: 'Contract with Client 1',
      send_email: true,
      message: { subject: 'Please sign', body: 'Sign here: {{submitter.link}}' },
      variables: { amount: 120 },
      submitters: parties(1),
    });
    declined = await call('POST /submissions', 'POST', '/submissions', {
      template_id: contract.id,
      send_email: false,
      submitters: parties(2),
    });
    pending = await call('POST /submissions', 'POST', '/submissions', {
      template_id: contract.id,
      send_email: false,
      expire_at: '2099-01-01 00:00:00',
      order: 'random',
      submitters: parties(3),
    });
    // Parties known by phone only, or by name only (DocuSeal requires one of email, phone, name).
    const sparse = await call('POST /submissions', 'POST', '/submissions', {
      template_id: contract.id,
      send_email: false,
      submitters: [
        { role: 'Client', phone: '+14155550101' },
        { role: 'Manager', name: 'Nameonly Manager' },
      ],
    });
    await call('GET /submissions/{id}', 'GET', `/submissions/${sparse[0].submission_id}`);
    await call('GET /submitters/{id}', 'GET', `/submitters/${sparse[0].id}`);
    await call('GET /submitters/{id}', 'GET', `/submitters/${sparse[1].id}`);
    const emails = await call('POST /submissions/emails', 'POST', '/submissions/emails', {
      template_id: htmlTemplate.id,
      emails: 'pat@openapi.test, sam@openapi.test',
      send_email: false,
    });
    expect(emails).toHaveLength(2);
    await settle();

    const [client, manager] = completed;
    const signature = new Blob([new Uint8Array(await strokePng(160, 50))], { type: 'image/png' });
    const initials = new Blob([new Uint8Array(await strokePng(60, 30))], { type: 'image/png' });
    const annex = new Blob([new Uint8Array(fixturePdf('documenso-a4-size.pdf'))], { type: 'application/pdf' });
    // The client leaves Notes and Phone empty: its `values` then list them with null.
    await sign(client.slug, contract, {
      'Full Name': 'Client One',
      Start: '2026-12-01',
      Seats: 5,
      Agree: true,
      Plan: 'Pro',
      Region: 'EU',
      Extras: ['Support'],
      'Client Sign': await upload(client.slug, 'signature', signature, 'sign.png'),
      'Client Initials': await upload(client.slug, 'initials', initials, 'initials.png'),
      Annex: [await upload(client.slug, 'file', annex, 'annex.pdf')],
    });
    await settle();
    await sign(manager.slug, contract, {
      'Manager Name': 'Max',
      'Manager Sign': await upload(manager.slug, 'signature', signature, 'sign.png'),
    });
    await settle();

    await form('mutation ($slug: String!) { openSigningForm(slug: $slug) { slug } }', { slug: declined[0].slug });
    await form('mutation ($s: String!, $r: String!) { declineSigningForm(slug: $s, reason: $r) { slug } }', {
      s: declined[0].slug,
      r: 'Wrong seats',
    });
    await settle();
  });

  it('GET /submissions/{id} and its documents, in every state', async () => {
    const done = await call('GET /submissions/{id}', 'GET', `/submissions/${completed[0].submission_id}`);
    expect(done.status).toBe('completed');
    expect(done.documents.length).toBeGreaterThan(0);
    expect(done.audit_log_url).toEqual(expect.any(String));
    expect(done.submitters[0].values.find((v: { field: string }) => v.field === 'Notes')).toEqual({
      field: 'Notes',
      value: null,
    });
    const withFields = await call(
      'GET /submissions/{id}',
      'GET',
      `/submissions/${completed[0].submission_id}?include=fields`,
    );
    expect(withFields.fields.length).toBe(contractFields.length);
    expect(
      (await call('GET /submissions/{id}', 'GET', `/submissions/${declined[0].submission_id}`)).submission_events.at(
        -1,
      ),
    ).toMatchObject({ event_type: 'decline_form', data: { reason: 'Wrong seats' } });
    await call('GET /submissions/{id}', 'GET', `/submissions/${pending[0].submission_id}`);

    const documents = await call(
      'GET /submissions/{id}/documents',
      'GET',
      `/submissions/${completed[0].submission_id}/documents`,
    );
    expect(documents.documents.length).toBeGreaterThan(0);
    await call('GET /submissions/{id}/documents', 'GET', `/submissions/${pending[0].submission_id}/documents`);
    await call(
      'GET /submissions/{id}/documents',
      'GET',
      `/submissions/${completed[0].submission_id}/documents?merge=true`,
    );
  });

  it('GET /submissions with each filter; DELETE /submissions/{id}', async () => {
    const archived = await call('DELETE /submissions/{id}', 'DELETE', `/submissions/${pending[0].submission_id}`);
    expect(archived.archived_at).toEqual(expect.any(String));
    for (const query of [
      '',
      '?limit=2',
      `?limit=2&after=${completed[0].submission_id}`,
      `?before=${pending[0].submission_id}`,
      `?template_id=${contract.id}`,
      '?status=pending',
      '?status=completed',
      '?status=declined',
      '?status=expired',
      '?q=client1',
      `?slug=${(await rest(t.url, alice.apiKey, 'GET', `/submissions/${completed[0].submission_id}`)).json.slug}`,
      `?template_folder=${encodeURIComponent('Contracts / 2026')}`,
      '?archived=true',
      '?archived=false',
      '?include=fields',
    ])
      await call('GET /submissions', 'GET', `/submissions${query}`);
  });

  it('GET /submitters with each filter, GET and PUT /submitters/{id}', async () => {
    for (const query of [
      '',
      '?limit=3',
      `?limit=2&after=${completed[0].id}`,
      `?before=${pending[1].id}`,
      `?submission_id=${completed[0].submission_id}`,
      '?q=manager2',
      `?slug=${completed[1].slug}`,
      '?external_id=client-1',
      '?completed_after=2000-01-01',
      `?completed_before=${encodeURIComponent('2099-01-01 00:00:00')}`,
      `?template_id=${contract.id}`,
      '?include=fields',
    ])
      await call('GET /submitters', 'GET', `/submitters${query}`);
    for (const party of [...completed, ...declined, ...pending])
      await call('GET /submitters/{id}', 'GET', `/submitters/${party.id}`);
    await call('PUT /submitters/{id}', 'PUT', `/submitters/${pending[1].id}`, {
      name: 'Manager Three',
      email: 'manager3b@openapi.test',
      values: { 'Manager Name': 'Three' },
      metadata: { note: 'changed' },
      send_email: false,
    });
    const done = await call('PUT /submitters/{id}', 'PUT', `/submitters/${pending[0].id}`, {
      completed: true,
      values: { Start: '2026-12-24', Plan: 'Basic', Region: 'US' },
    });
    expect(done.status).toBe('completed');
  });
});

describe('one-off submissions', { timeout: 300_000 }, () => {
  const submitters = [{ role: 'Signer', email: 'signer@openapi.test', name: 'Sig Ner' }];

  it('POST /submissions/pdf', async () => {
    const pdf = await drawPdf([
      { texts: [{ text: 'Receipt {{Signer Sign;type=signature;role=Signer}}', x: 72, y: 72 }] },
    ]);
    const json = await call('POST /submissions/pdf', 'POST', '/submissions/pdf', {
      name: 'Receipt',
      send_email: false,
      documents: [{ name: 'receipt', file: base64(pdf) }],
      submitters,
    });
    expect(json.fields.map((f: { name: string }) => f.name)).toEqual(['Signer Sign']);
  });

  it('POST /submissions/html', async () => {
    const json = await call('POST /submissions/html', 'POST', '/submissions/html', {
      name: 'Note',
      send_email: false,
      expire_at: '2099-01-01 00:00:00',
      documents: [
        {
          name: 'note',
          html:
            '<p>Seen: <signature-field name="Signer Sign" role="Signer" ' +
            'style="width: 200px; height: 50px; display: inline-block"></signature-field></p>',
        },
      ],
      submitters,
    });
    expect(json.submitters).toHaveLength(1);
  });

  it('POST /submissions/docx', async () => {
    const json = await call('POST /submissions/docx', 'POST', '/submissions/docx', {
      name: 'Memo',
      send_email: false,
      documents: [
        {
          name: 'memo',
          file: makeDocx([{ paragraph: 'Memo. {{Signer Sign;type=signature;role=Signer}}' }]).toString('base64'),
        },
      ],
      submitters,
    });
    expect(json.fields.map((f: { name: string }) => f.name)).toEqual(['Signer Sign']);
  });
});

describe('coverage', () => {
  it('validated an answer of every operation in the OpenAPI document', () => {
    expect(OPERATIONS.length).toBe(22);
    expect(OPERATIONS.filter((operation) => !validated.has(operation))).toEqual([]);
  });
});
