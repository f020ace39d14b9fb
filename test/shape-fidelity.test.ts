/**
 * DocuSeal shape fidelity (issue 15): `include=fields` on every route DocuSeal honours it
 * (GET /submissions, GET/PUT /submissions/{id}, GET /submitters, GET/PUT /submitters/{id}, the
 * create answers) and GraphQL's Submission.fields / Submitter.fields; `submission_events[].data`
 * narrowed as DocuSeal narrows it; `GET /templates?shared=true` (no sharing: an empty page); users
 * without names sent as "" (template author, created_by_user, GET /user); a submission's name
 * falling back to its template's in the emails. Answers are checked against the OpenAPI schema.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let nameless: CreatedAccount;
let templateId: number;
let fieldUuids: Record<string, string>;

const api = (method: string, path: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, path, body);

async function ok(method: string, path: string, body?: unknown, key?: string) {
  const { status, json } = await api(method, path, body, key);
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

const template = (name: string) => ({
  name,
  documents: [{ name: 'lease', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
  fields: [
    { name: 'Tenant Name', role: 'Tenant', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] },
    { name: 'Notes', role: 'Tenant', required: false, areas: [{ x: 72, y: 110, w: 150, h: 24, page: 1 }] },
    { name: 'Landlord Name', role: 'Landlord', areas: [{ x: 72, y: 200, w: 150, h: 24, page: 1 }] },
  ],
});

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@fidelity.test' });
  // A user made without names (as `signet` can): DocuSeal's forms would have given "".
  nameless = await createAccount(t.db, { name: 'Nameless Ltd', email: 'nameless@fidelity.test' });
  const created = await ok('POST', '/templates/pdf', template('Lease'));
  templateId = created.id;
  fieldUuids = Object.fromEntries(created.fields.map((f: { name: string; uuid: string }) => [f.name, f.uuid]));
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** A submission: the tenant with "Tina" prefilled (and `readonly_fields` Notes), the landlord empty. */
async function createSubmission(path = '/submissions', extra: Record<string, unknown> = {}) {
  return ok('POST', path, {
    template_id: templateId,
    send_email: false,
    submitters: [
      { role: 'Tenant', email: 'tina@fidelity.test', values: { 'Tenant Name': 'Tina' }, readonly_fields: ['Notes'] },
      { role: 'Landlord', email: 'lou@fidelity.test' },
    ],
    ...extra,
  });
}

describe('include=fields', () => {
  it('adds the submission fields and each submitter fields on GET /submissions/{id}, the list and PUT', async () => {
    const [tenant, landlord] = await createSubmission();
    const id = tenant.submission_id;

    const plain = await ok('GET', `/submissions/${id}`);
    expect(plain).not.toHaveProperty('fields');
    expect(plain.submitters[0]).not.toHaveProperty('fields');

    const got = await ok('GET', `/submissions/${id}?include=fields`);
    expect(openApiErrors('get', '/submissions/{id}', got)).toEqual([]);
    // The submission's own copy of the template's fields, as the template shows them: the prefilled
    // value is its default there, and its Notes is read-only (readonly_fields).
    const templateFields = (await ok('GET', `/templates/${templateId}`)).fields;
    expect(got.fields.map((f: { uuid: string }) => f.uuid)).toEqual(
      templateFields.map((f: { uuid: string }) => f.uuid),
    );
    expect(got.fields[0]).toEqual({ ...templateFields[0], default_value: 'Tina' });
    expect(got.fields[1]).toEqual({ ...templateFields[1], readonly: true });
    // Each submitter: the fields `values` lists, as {name, uuid, value, readonly}.
    const byId = new Map(got.submitters.map((s: { id: number }) => [s.id, s]));
    expect((byId.get(tenant.id) as any).fields).toEqual([
      { name: 'Tenant Name', uuid: fieldUuids['Tenant Name'], value: 'Tina', readonly: false },
    ]);
    expect((byId.get(landlord.id) as any).fields).toEqual([]);

    // DocuSeal reads `include` as a substring: "fields,combined_document_url" has it too.
    const list = await ok('GET', `/submissions?include=fields,combined_document_url&template_id=${templateId}`);
    expect(openApiErrors('get', '/submissions', list)).toEqual([]);
    const item = list.data.find((s: { id: number }) => s.id === id);
    expect(item.fields).toEqual(got.fields);
    expect(item.submitters.find((s: { id: number }) => s.id === tenant.id).fields).toEqual(
      (byId.get(tenant.id) as any).fields,
    );
    // The same page without it: the kept items, without the key.
    const again = await ok('GET', `/submissions?template_id=${templateId}`);
    expect(again.data.find((s: { id: number }) => s.id === id)).not.toHaveProperty('fields');
    expect(
      (await ok('GET', `/submissions?include=combined_document_url&template_id=${templateId}`)).data[0],
    ).not.toHaveProperty('fields');

    const put = await ok('PUT', `/submissions/${id}?include=fields`, { name: 'Renamed' });
    expect(put.fields).toEqual(got.fields);
    expect(put.submitters.find((s: { id: number }) => s.id === tenant.id).fields).toHaveLength(1);
    expect(await ok('PUT', `/submissions/${id}`, { name: 'Renamed again' })).not.toHaveProperty('fields');
  });

  it('adds the submitter fields on GET /submitters, GET and PUT /submitters/{id} and the create answers', async () => {
    const [tenant] = await createSubmission();
    const expected = [{ name: 'Tenant Name', uuid: fieldUuids['Tenant Name'], value: 'Tina', readonly: false }];

    const one = await ok('GET', `/submitters/${tenant.id}?include=fields`);
    expect(openApiErrors('get', '/submitters/{id}', one)).toEqual([]);
    expect(one.fields).toEqual(expected);
    expect(await ok('GET', `/submitters/${tenant.id}`)).not.toHaveProperty('fields');

    const list = await ok('GET', `/submitters?submission_id=${tenant.submission_id}&include=fields`);
    expect(openApiErrors('get', '/submitters', list)).toEqual([]);
    expect(list.data.map((s: { fields: unknown[] }) => s.fields)).toEqual([expected, []]);

    const put = await ok('PUT', `/submitters/${tenant.id}?include=fields`, { values: { Notes: 'n' } });
    expect(openApiErrors('put', '/submitters/{id}', put)).toEqual([]);
    expect(put.fields).toEqual([...expected, { name: 'Notes', uuid: fieldUuids.Notes, value: 'n', readonly: true }]);

    // Create: `include` in the body (Rails' params) or in the query.
    const created = await createSubmission('/submissions', { include: 'fields' });
    expect(openApiErrors('post', '/submissions', created)).toEqual([]);
    expect(created.map((s: { fields: unknown[] }) => s.fields)).toEqual([expected, []]);
    const init = await createSubmission('/submissions/init?include=fields');
    expect(init.submitters.map((s: { fields: unknown[] }) => s.fields)).toEqual([expected, []]);
    expect((await createSubmission())[0]).not.toHaveProperty('fields');
  });

  it('is GraphQL Submission.fields and Submitter.fields', async () => {
    const [tenant] = await createSubmission();
    const rest = await ok('GET', `/submissions/${tenant.submission_id}?include=fields`);
    const { body } = await graphql(
      t.url,
      `query ($id: Int!) { submission(id: $id) {
        fields { uuid name readonly submitterUuid }
        submitters { id fields { name uuid value readonly } }
      } }`,
      { key: alice.apiKey, variables: { id: tenant.submission_id } },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data.submission.fields).toEqual(
      rest.fields.map((f: any) => ({
        uuid: f.uuid,
        name: f.name,
        readonly: f.readonly ?? false,
        submitterUuid: f.submitter_uuid,
      })),
    );
    expect(body.data.submission.submitters).toEqual(
      rest.submitters.map((s: { id: number; fields: unknown[] }) => ({ id: s.id, fields: s.fields })),
    );
  });
});

describe('submission_events[].data', () => {
  it("is the event's data narrowed to DocuSeal's keys: the decline reason, {} otherwise", async () => {
    const [tenant] = await createSubmission();
    const opened = await graphql(t.url, 'mutation ($slug: String!) { openSigningForm(slug: $slug) { slug } }', {
      variables: { slug: tenant.slug },
      headers: { 'user-agent': 'Fidelity/1.0' },
    });
    expect(opened.body.errors).toBeUndefined();
    const declined = await graphql(
      t.url,
      'mutation ($slug: String!, $reason: String!) { declineSigningForm(slug: $slug, reason: $reason) { slug } }',
      { variables: { slug: tenant.slug, reason: 'Wrong rent' } },
    );
    expect(declined.body.errors).toBeUndefined();

    const got = await ok('GET', `/submissions/${tenant.submission_id}`);
    expect(openApiErrors('get', '/submissions/{id}', got)).toEqual([]);
    const events = got.submission_events.map((e: { event_type: string; data: unknown }) => [e.event_type, e.data]);
    // The stored data has ip and ua too (view_form, decline_form): DocuSeal never shows them.
    expect(events).toEqual([
      ['view_form', {}],
      ['decline_form', { reason: 'Wrong rent' }],
    ]);
    const submitter = await ok('GET', `/submitters/${tenant.id}`);
    expect(openApiErrors('get', '/submitters/{id}', submitter)).toEqual([]);
    expect(submitter.submission_events.map((e: { data: unknown }) => e.data)).toEqual([{}, { reason: 'Wrong rent' }]);
  });
});

describe('GET /templates?shared=true', () => {
  it('is an empty page: no template is shared with the account (DocuSeal without a linked account)', async () => {
    expect((await ok('GET', '/templates')).data.length).toBeGreaterThan(0);
    const shared = await ok('GET', '/templates?shared=true');
    expect(shared).toEqual({ data: [], pagination: { count: 0, next: null, prev: null } });
    expect(openApiErrors('get', '/templates', shared)).toEqual([]);
    // Any other value is not `true` for DocuSeal (`params[:shared].in?(['true', true])`).
    expect((await ok('GET', '/templates?shared=1')).data.length).toBeGreaterThan(0);
    const { body } = await graphql(t.url, '{ templates(shared: true) { nodes { id } pagination { count } } }', {
      key: alice.apiKey,
    });
    expect(body.data.templates).toEqual({ nodes: [], pagination: { count: 0 } });
  });
});

describe('users without names', () => {
  it('are "" in GET /user, a template author and a submission created_by_user', async () => {
    const user = await ok('GET', '/user', undefined, nameless.apiKey);
    expect(user).toEqual({ id: nameless.userId, first_name: '', last_name: '', email: 'nameless@fidelity.test' });

    const created = await ok('POST', '/templates/pdf', template('Nameless lease'), nameless.apiKey);
    expect(created.author).toEqual(user);
    expect(openApiErrors('get', '/templates/{id}', created)).toEqual([]);
    const listed = await ok('GET', '/templates', undefined, nameless.apiKey);
    expect(openApiErrors('get', '/templates', listed)).toEqual([]);
    expect(listed.data[0].author).toEqual(user);

    const [party] = await ok(
      'POST',
      '/submissions',
      { template_id: created.id, send_email: false, submitters: [{ role: 'Tenant', email: 'x@fidelity.test' }] },
      nameless.apiKey,
    );
    const submission = await ok('GET', `/submissions/${party.submission_id}`, undefined, nameless.apiKey);
    const creator = { id: nameless.userId, email: 'nameless@fidelity.test', first_name: '', last_name: '' };
    expect(submission.created_by_user).toEqual(creator);
    expect(openApiErrors('get', '/submissions/{id}', submission)).toEqual([]);
    const list = await ok('GET', '/submissions', undefined, nameless.apiKey);
    expect(list.data[0].created_by_user).toEqual(creator);
    expect(openApiErrors('get', '/submissions', list)).toEqual([]);
  });
});

describe("a submission's name in the emails", () => {
  it('names the submission, else its template, as DocuSeal (`submission.name || template.name`)', async () => {
    const body = (submitter: { role: string; email: string }) => ({
      template_id: templateId,
      submitters: [submitter, { role: 'Landlord', email: 'lou@fidelity.test', send_email: false }],
    });
    const [named] = await ok('POST', '/submissions', {
      ...body({ role: 'Tenant', email: 'named@fidelity.test' }),
      name: 'Lease for flat 4',
    });
    const [unnamed] = await ok('POST', '/submissions', body({ role: 'Tenant', email: 'unnamed@fidelity.test' }));
    await t.outboxRelayed();
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    const text = async (submitterId: number) =>
      (await t.db.emailMessage.findFirstOrThrow({ where: { submitterId } })).textBody;
    expect(await text(named.id)).toContain('You have been invited to submit the "Lease for flat 4" form.');
    expect(await text(unnamed.id)).toContain('You have been invited to submit the "Lease" form.');
  });
});
