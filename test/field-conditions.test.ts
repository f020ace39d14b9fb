/**
 * Field `conditions` (issue 15), against a real server and PostgreSQL:
 * - the rule (src/templates/field-conditions.ts) on its own: and/or, options, numbers, a chain of
 *   hidden fields, a loop;
 * - templates: conditions given on create (REST and GraphQL) are checked (422 naming the
 *   condition) and kept in DocuSeal's shape (GET /templates/{id}, GraphQL TemplateField), and clone
 *   remaps them;
 * - completion: the form (completeSigningForm) does not require a hidden field and drops its
 *   value, refuses a shown required one left empty; the API's `completed: true` (POST /submissions,
 *   PUT /submitters/{id}) drops hidden values; the completed PDF (pdftotext) and the audit log
 *   have no text of a hidden field; a condition on another party's field is judged when the form
 *   is loaded.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { evaluateConditions, hiddenFieldUuids } from '../src/templates/field-conditions.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-field-conditions-'));

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const pdfText = async (url: string, name: string) => {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
};

/** POST /graphql for the signer (no API key). */
async function form(query: string, variables: Record<string, unknown>) {
  const { status, body } = await graphql(t.url, query, { variables });
  expect(status).toBe(200);
  return body as { data?: any; errors?: { message: string; extensions?: { code?: string; fieldUuid?: string } }[] };
}
const FIELDS = 'fields { uuid name own required conditions { fieldUuid value action operation } }';
const loadForm = (slug: string) =>
  form(`query ($slug: String!) { signingForm(slug: $slug) { state ${FIELDS} } }`, { slug });
const completeForm = async (slug: string, values: unknown) => {
  await acceptConsentViaApi(t.url, slug);
  return form(
    'mutation ($slug: String!, $values: JSON) ' +
      `{ completeSigningForm(slug: $slug, values: $values) { state ${FIELDS} } }`,
    { slug, values },
  );
};

/** A value of DocuSeal's submitter `values` list by field name (undefined when not listed). */
const listedValue = (values: { field: string; value: unknown }[], name: string) =>
  values.find((v) => v.field === name)?.value;

const area = (y: number) => [{ x: 60, y, w: 240, h: 24, page: 1 }];

/** A template whose fields are given as they are; returns the REST answer. */
async function createTemplate(fields: unknown[], name = 'Conditions') {
  return api('POST', '/templates/pdf', {
    name,
    documents: [{ name, file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields,
  });
}

/** Company (required) shows only while "Has company" is ticked. */
const COMPANY_FIELDS = [
  { name: 'Full Name', role: 'Signer', areas: area(100) },
  { name: 'Has company', uuid: 'has-company', type: 'checkbox', required: false, role: 'Signer', areas: area(140) },
  {
    name: 'Company',
    role: 'Signer',
    areas: area(180),
    conditions: [{ field_uuid: 'has-company', action: 'checked' }],
  },
];

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Conditions Ltd', email: 'alice@conditions.test' });
});

afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the rule', () => {
  const plan = {
    uuid: 'plan',
    type: 'radio',
    options: [
      { value: 'Basic', uuid: 'o1' },
      { value: '', uuid: 'o2' },
    ],
  };
  const seats = { uuid: 'seats', type: 'number' };

  it('ands conditions, ors `operation: or` with the one before, and reads option uuids as their values', () => {
    const notes = {
      uuid: 'notes',
      type: 'text',
      conditions: [
        { field_uuid: 'plan', value: 'o1', action: 'equal' },
        { field_uuid: 'seats', value: '10', action: 'greater_than', operation: 'or' },
        { field_uuid: 'seats', action: 'not_empty' },
      ],
    };
    const shown = (values: Record<string, unknown>) =>
      evaluateConditions([plan, seats, notes], values).isShown('notes');
    expect(shown({ plan: 'Basic', seats: 1 })).toBe(true);
    expect(shown({ plan: 'Option 2', seats: 11 })).toBe(true);
    expect(shown({ plan: 'Option 2', seats: 3 })).toBe(false);
    expect(shown({ plan: 'Basic' })).toBe(false);
    // An option without a value is "Option N".
    const second = { uuid: 'x', type: 'text', conditions: [{ field_uuid: 'plan', value: 'o2', action: 'equal' }] };
    expect(evaluateConditions([plan, second], { plan: 'Option 2' }).isShown('x')).toBe(true);
    expect(evaluateConditions([plan, second], { plan: 'Basic' }).isShown('x')).toBe(false);
  });

  it('treats a hidden field as empty, in any order, and stops at a loop', () => {
    const c = { uuid: 'c', type: 'text', conditions: [{ field_uuid: 'b', action: 'not_empty' }] };
    const b = { uuid: 'b', type: 'text', conditions: [{ field_uuid: 'a', action: 'checked' }] };
    const a = { uuid: 'a', type: 'checkbox' };
    expect([...hiddenFieldUuids([c, b, a], { a: false, b: 'kept', c: 'x' })]).toEqual(['c', 'b']);
    expect([...hiddenFieldUuids([c, b, a], { a: true, b: 'kept' })]).toEqual([]);
    const d = { uuid: 'd', type: 'text', conditions: [{ field_uuid: 'e', action: 'not_empty' }] };
    const e = { uuid: 'e', type: 'text', conditions: [{ field_uuid: 'd', action: 'not_empty' }] };
    expect([...hiddenFieldUuids([d, e], { d: 'x', e: 'y' })]).toEqual([]);
    expect([...hiddenFieldUuids([d, e], {})].sort()).toEqual(['d', 'e']);
  });

  it('falls back to the default value, and knows empty, unchecked and does_not_contain', () => {
    const tags = { uuid: 't', type: 'multiple', options: [{ value: 'A', uuid: 'ta' }], default_value: ['A'] };
    const f = (action: string, value?: string) => ({
      uuid: 'f',
      type: 'text',
      conditions: [{ field_uuid: 't', action, ...(value ? { value } : {}) }],
    });
    expect(evaluateConditions([tags, f('not_empty')], {}).isShown('f')).toBe(true);
    expect(evaluateConditions([tags, f('empty')], { t: [] }).isShown('f')).toBe(true);
    expect(evaluateConditions([tags, f('does_not_contain', 'ta')], {}).isShown('f')).toBe(false);
    expect(evaluateConditions([tags, f('does_not_contain', 'ta')], { t: [] }).isShown('f')).toBe(true);
    expect(evaluateConditions([tags, f('unchecked')], { t: [] }).isShown('f')).toBe(true);
  });
});

describe('templates keep conditions', () => {
  it('create: DocuSeal’s shape in the answer and GET /templates/{id}; option values become option uuids', async () => {
    const created = await createTemplate([
      ...COMPANY_FIELDS,
      { name: 'Plan', type: 'radio', options: ['Basic', 'Pro'], role: 'Signer', areas: area(220) },
      {
        name: 'Seats',
        type: 'number',
        role: 'Signer',
        areas: area(260),
        conditions: [
          { field_name: 'plan', action: 'equal', value: 'Pro' },
          { field_name: 'Has company', action: 'checked', operation: 'or' },
        ],
      },
    ]);
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const got = await api('GET', `/templates/${created.json.id}`);
    expect(got.status).toBe(200);
    expect(openApiErrors('get', '/templates/{id}', got.json)).toEqual([]);
    for (const template of [created.json, got.json]) {
      const byName = (name: string) => template.fields.find((f: { name: string }) => f.name === name);
      expect(byName('Has company').uuid).toBe('has-company');
      expect(byName('Full Name')).not.toHaveProperty('conditions');
      expect(byName('Company').conditions).toEqual([{ field_uuid: 'has-company', value: null, action: 'checked' }]);
      const pro = byName('Plan').options.find((o: { value: string }) => o.value === 'Pro');
      expect(byName('Seats').conditions).toEqual([
        { field_uuid: byName('Plan').uuid, value: pro.uuid, action: 'equal' },
        { field_uuid: 'has-company', value: null, action: 'checked', operation: 'or' },
      ]);
    }

    // A clone names its own fields and options.
    const clone = await api('POST', `/templates/${created.json.id}/clone`, {});
    expect(clone.status, JSON.stringify(clone.json)).toBe(200);
    const cloned = (name: string) => clone.json.fields.find((f: { name: string }) => f.name === name);
    const clonedPro = cloned('Plan').options.find((o: { value: string }) => o.value === 'Pro');
    expect(cloned('Has company').uuid).not.toBe('has-company');
    expect(cloned('Company').conditions).toEqual([
      { field_uuid: cloned('Has company').uuid, value: null, action: 'checked' },
    ]);
    expect(cloned('Seats').conditions[0]).toEqual({
      field_uuid: cloned('Plan').uuid,
      value: clonedPro.uuid,
      action: 'equal',
    });
  });

  it('refuses a condition that names no field of the template, or does not fit it (422, nothing written)', async () => {
    const before = await api('GET', '/templates');
    const cases: [unknown[], string][] = [
      [
        [{ name: 'A', areas: area(100), conditions: [{ field_uuid: 'nope', action: 'checked' }] }],
        'field_uuid "nope" is not a field of this template in `fields[0].conditions[0]`.',
      ],
      [
        [{ name: 'A', areas: area(100), conditions: [{ field_name: 'B', action: 'not_empty' }] }],
        'field_name "B" is not a field of this template in `fields[0].conditions[0]`.',
      ],
      [
        [{ name: 'A', uuid: 'a', areas: area(100), conditions: [{ field_uuid: 'a', action: 'not_empty' }] }],
        'a condition cannot name its own field in `fields[0].conditions[0]`.',
      ],
      [
        [
          { name: 'A', uuid: 'a', areas: area(100) },
          { name: 'B', areas: area(140), conditions: [{ field_uuid: 'a', action: 'is_blue' }] },
        ],
        'action must be one of: empty, not_empty, checked, unchecked, equal, not_equal, contains, does_not_contain, ' +
          'greater_than, less_than in `fields[1].conditions[0].action`.',
      ],
      [
        [
          { name: 'A', uuid: 'a', areas: area(100) },
          { name: 'B', areas: area(140), conditions: [{ field_uuid: 'a', action: 'equal' }] },
        ],
        'value is required for action equal in `fields[1].conditions[0]`.',
      ],
      [
        [
          { name: 'P', type: 'select', options: ['x', 'y'], areas: area(100) },
          { name: 'B', areas: area(140), conditions: [{ field_name: 'P', action: 'equal', value: 'z' }] },
        ],
        'value "z" is not one of the options of field "P" in `fields[1].conditions[0]`.',
      ],
      [
        [
          { name: 'A', uuid: 'same', areas: area(100) },
          { name: 'B', uuid: 'same', areas: area(140) },
        ],
        'uuid "same" is given to another field too in `fields[1]`.',
      ],
      [
        [
          { name: 'A', areas: area(100) },
          { name: 'A', areas: area(140) },
          { name: 'B', areas: area(180), conditions: [{ field_name: 'a', action: 'not_empty' }] },
        ],
        'field_name "a" names 2 fields: use field_uuid in `fields[2].conditions[0]`.',
      ],
    ];
    for (const [fields, message] of cases) {
      const answer = await createTemplate(fields);
      expect(answer.status, JSON.stringify(answer.json)).toBe(422);
      expect(answer.json).toEqual({ error: message });
    }
    expect((await api('GET', '/templates')).json.data.length).toBe(before.json.data.length);
  });

  it('GraphQL: createTemplateFromPdf takes conditions and TemplateField.conditions shows them', async () => {
    const mutation = /* GraphQL */ `
      mutation ($input: CreateTemplateFromFileInput!) {
        createTemplateFromPdf(input: $input) {
          template { fields { uuid name conditions { fieldUuid value action operation } } }
        }
      }
    `;
    const input = (conditions: unknown[]) => ({
      name: 'GraphQL conditions',
      documents: [
        {
          file: base64(fixturePdf('docuseal-sample-document.pdf')),
          fields: [
            { name: 'Agree', uuid: 'agree', type: 'checkbox', areas: area(100) },
            { name: 'Why not', areas: area(140), conditions },
          ],
        },
      ],
    });
    const ok = await graphql(t.url, mutation, {
      key: alice.apiKey,
      variables: { input: input([{ fieldUuid: 'agree', action: 'unchecked' }]) },
    });
    expect(ok.body.errors).toBeUndefined();
    const fields = ok.body.data.createTemplateFromPdf.template.fields;
    expect(fields[0].conditions).toBeNull();
    expect(fields[1].conditions).toEqual([{ fieldUuid: 'agree', value: null, action: 'unchecked', operation: null }]);

    const bad = await graphql(t.url, mutation, {
      key: alice.apiKey,
      variables: { input: input([{ fieldName: 'Nobody', action: 'unchecked' }]) },
    });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    expect(bad.body.errors?.[0]?.message).toBe(
      'field_name "Nobody" is not a field of this template in `documents[0].fields[1].conditions[0]`.',
    );
  });
});

describe('completion honours conditions', () => {
  let templateId: number;
  let companyUuid: string;

  beforeAll(async () => {
    const created = await createTemplate(COMPANY_FIELDS, 'Company form');
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    templateId = created.json.id;
    companyUuid = created.json.fields.find((f: { name: string }) => f.name === 'Company').uuid;
  });

  const submit = async (submitter: Record<string, unknown> = {}) => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: `s-${Math.random().toString(36).slice(2)}@conditions.test`, ...submitter }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    return created.json[0] as { id: number; slug: string; submission_id: number };
  };
  const finished = async (submissionId: number) => {
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const done = (await api('GET', `/submissions/${submissionId}`)).json;
    expect(done.status).toBe('completed');
    return done;
  };

  it('the form: a hidden required field left empty completes, its saved value is dropped, drawn nowhere', async () => {
    const signer = await submit();
    const save = await form(
      'mutation ($slug: String!, $values: JSON!) { saveSigningFormValues(slug: $slug, values: $values) { state } }',
      { slug: signer.slug, values: { [companyUuid]: 'Hidden Holdings', 'has-company': true } },
    );
    expect(save.errors).toBeUndefined();
    // Unticked again: Company is hidden, not required, and what was saved in it goes.
    const nameUuid = (await loadForm(signer.slug)).data.signingForm.fields[0].uuid;
    const completed = await completeForm(signer.slug, { [nameUuid]: 'Nora Visible', 'has-company': false });
    expect(completed.errors).toBeUndefined();
    expect(completed.data.completeSigningForm.state).toBe('COMPLETED');

    const submitter = (await api('GET', `/submitters/${signer.id}`)).json;
    expect(listedValue(submitter.values, 'Company')).toBeNull();
    expect(listedValue(submitter.values, 'Full Name')).toBe('Nora Visible');
    const submission = await finished(signer.submission_id);
    const documentText = await pdfText(submission.documents[0].url, 'hidden-form.pdf');
    expect(documentText).toContain('Nora Visible');
    expect(documentText).not.toContain('Hidden Holdings');
    const logText = await pdfText(submission.audit_log_url, 'hidden-form-audit.pdf');
    expect(logText).toContain('Nora Visible');
    expect(logText).not.toContain('Hidden Holdings');
    expect(logText).not.toContain('COMPANY'); // the audit log's field names are upper case
  });

  it('the form: a shown required field left empty is refused (VALIDATION, the field named)', async () => {
    const signer = await submit();
    const fields = (await loadForm(signer.slug)).data.signingForm.fields;
    expect(fields.find((f: { uuid: string }) => f.uuid === companyUuid).conditions).toEqual([
      { fieldUuid: 'has-company', value: null, action: 'checked', operation: null },
    ]);
    const refused = await completeForm(signer.slug, { [fields[0].uuid]: 'Nora', 'has-company': true });
    const retry = { [fields[0].uuid]: 'Nora', 'has-company': true };
    expect(refused.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    expect(refused.errors?.[0]?.extensions?.fieldUuid).toBe(companyUuid);
    expect(refused.errors?.[0]?.message).toBe('Company is required');
    // Shown and filled, it is kept and drawn.
    const completed = await completeForm(signer.slug, { ...retry, [companyUuid]: 'Shown Company SA' });
    expect(completed.errors).toBeUndefined();
    const submission = await finished(signer.submission_id);
    expect(await pdfText(submission.documents[0].url, 'shown-form.pdf')).toContain('Shown Company SA');
  });

  it('the API’s completed: true (POST /submissions, PUT /submitters/{id}) drops a hidden field’s value', async () => {
    const created = await submit({
      completed: true,
      values: { 'Full Name': 'Api Person', Company: 'Api Hidden Corp', 'Has company': false },
    });
    const submission = await finished(created.submission_id);
    expect(listedValue(submission.submitters[0].values, 'Full Name')).toBe('Api Person');
    expect(listedValue(submission.submitters[0].values, 'Company')).toBeNull();
    const text = await pdfText(submission.documents[0].url, 'api-create.pdf');
    expect(text).toContain('Api Person');
    expect(text).not.toContain('Api Hidden Corp');

    const pending = await submit({ values: { Company: 'Put Hidden Corp' } });
    const put = await api('PUT', `/submitters/${pending.id}`, {
      completed: true,
      values: { 'Full Name': 'Put Person' },
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(listedValue(put.json.values, 'Company')).toBeNull();
    const putDone = await finished(pending.submission_id);
    const putText = await pdfText(putDone.documents[0].url, 'api-put.pdf');
    expect(putText).toContain('Put Person');
    expect(putText).not.toContain('Put Hidden Corp');

    // Shown (ticked), the value stays.
    const shown = await submit({ completed: true, values: { Company: 'Kept Corp', 'Has company': true } });
    const shownDone = await finished(shown.submission_id);
    expect(listedValue(shownDone.submitters[0].values, 'Company')).toBe('Kept Corp');
  });

  it('a condition on another party’s field is judged when the form is loaded', async () => {
    const created = await createTemplate(
      [
        { name: 'Approve', uuid: 'approve', type: 'checkbox', required: false, role: 'Manager', areas: area(100) },
        { name: 'Client name', role: 'Client', areas: area(140) },
        {
          name: 'Approved terms',
          role: 'Client',
          areas: area(180),
          conditions: [
            { field_uuid: 'approve', action: 'checked' },
            { field_name: 'Client name', action: 'not_empty' },
          ],
        },
      ],
      'Two parties',
    );
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const parties = await api('POST', '/submissions', {
      template_id: created.json.id,
      send_email: false,
      submitters: [
        { role: 'Manager', email: 'manager@conditions.test', completed: true, values: { Approve: false } },
        { role: 'Client', email: 'client@conditions.test' },
      ],
    });
    expect(parties.status, JSON.stringify(parties.json)).toBe(200);
    const client = parties.json.find((s: { role: string }) => s.role === 'Client');
    const fields = (await loadForm(client.slug)).data.signingForm.fields.filter((f: { own: boolean }) => f.own);
    // Not approved: "Approved terms" is not in the client's form, and not required on completion.
    expect(fields.map((f: { name: string }) => f.name)).toEqual(['Client name']);
    const completed = await completeForm(client.slug, { [fields[0].uuid]: 'Clara' });
    expect(completed.errors).toBeUndefined();

    // Approved: the field is there, with the condition on the client's own field left to the page.
    const approved = await api('POST', '/submissions', {
      template_id: created.json.id,
      send_email: false,
      submitters: [
        { role: 'Manager', email: 'manager@conditions.test', completed: true, values: { Approve: true } },
        { role: 'Client', email: 'client@conditions.test' },
      ],
    });
    const other = approved.json.find((s: { role: string }) => s.role === 'Client');
    const shown = (await loadForm(other.slug)).data.signingForm.fields.filter((f: { own: boolean }) => f.own);
    const clientName = created.json.fields.find((f: { name: string }) => f.name === 'Client name').uuid;
    expect(shown.map((f: { name: string }) => f.name)).toEqual(['Client name', 'Approved terms']);
    expect(shown[1].conditions).toEqual([{ fieldUuid: clientName, value: null, action: 'not_empty', operation: null }]);
    const refused = await completeForm(other.slug, { [clientName]: 'Clara' });
    expect(refused.errors?.[0]?.message).toBe('Approved terms is required');
  });
});
