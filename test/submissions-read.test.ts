/**
 * Reading and changing submissions and submitters over DocuSeal's REST routes: shapes (validated
 * against the OpenAPI schemas), filters, pagination, statuses, archive semantics, tenant checks
 * route by route, and a constant query count for list pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;

const api = (method: string, path: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, path, body);

async function createSubmission(submitters: unknown[], extra: Record<string, unknown> = {}) {
  const { status, json } = await api('POST', '/submissions', { template_id: templateId, submitters, ...extra });
  expect(status, JSON.stringify(json)).toBe(200);
  return json as { id: number; submission_id: number }[];
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@read.test' });
  bob = await t.createAccount({ email: 'bob@read.test' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Lease',
    folder_name: 'Housing',
    documents: [{ name: 'lease', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Tenant Name', role: 'Tenant', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] },
      { name: 'Landlord Name', role: 'Landlord', areas: [{ x: 72, y: 200, w: 150, h: 24, page: 1 }] },
    ],
  });
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
});

describe('GET /submissions', () => {
  it('lists in the list shape, ascending, with filters and DocuSeal pagination', async () => {
    const first = await createSubmission([
      { role: 'Tenant', email: 'tina@example.test', name: 'Tina' },
      { role: 'Landlord', email: 'lou@example.test' },
    ]);
    const second = await createSubmission([
      { role: 'Tenant', email: 'tom@example.test', completed: true },
      { role: 'Landlord', email: 'lou@example.test', completed: true },
    ]);
    const { status, json } = await api('GET', '/submissions?limit=100');
    expect(status).toBe(200);
    expect(openApiErrors('get', '/submissions', json)).toEqual([]);
    const ids = json.data.map((s: { id: number }) => s.id);
    expect(ids).toEqual([...ids].sort((a: number, b: number) => a - b));
    const item = json.data.find((s: { id: number }) => s.id === first[0]!.submission_id);
    expect(item).toMatchObject({
      source: 'api',
      submitters_order: 'preserved',
      status: 'pending',
      completed_at: null,
      audit_log_url: null,
      template: { id: templateId, name: 'Lease', folder_name: 'Housing' },
      created_by_user: { id: alice.userId, email: 'alice@read.test' },
    });
    expect(item.submitters[0]).not.toHaveProperty('values');
    expect(item.submitters.map((s: { role: string; status: string }) => [s.role, s.status])).toEqual([
      ['Tenant', 'sent'],
      ['Landlord', 'awaiting'],
    ]);

    expect((await api('GET', '/submissions?q=TINA')).json.data.map((s: { id: number }) => s.id)).toEqual([
      first[0]!.submission_id,
    ]);
    expect((await api('GET', '/submissions?status=completed')).json.data.map((s: { id: number }) => s.id)).toEqual([
      second[0]!.submission_id,
    ]);
    expect(
      (await api('GET', `/submissions?template_id=${templateId}&status=pending`)).json.data.map(
        (s: { id: number }) => s.id,
      ),
    ).toContain(first[0]!.submission_id);
    expect((await api('GET', '/submissions?template_folder=Housing')).json.data.length).toBeGreaterThanOrEqual(2);
    expect((await api('GET', '/submissions?template_folder=Nowhere')).json.data).toEqual([]);
    expect((await api('GET', `/templates/${templateId}/submissions`)).json.data.length).toBeGreaterThanOrEqual(2);

    const page = await api('GET', '/submissions?limit=1');
    expect(page.json.pagination).toEqual({ count: 1, next: page.json.data[0].id, prev: page.json.data[0].id });
    const next = await api('GET', `/submissions?limit=1&after=${page.json.pagination.next}`);
    expect(next.json.data[0].id).toBeGreaterThan(page.json.data[0].id);
    // Another account sees none of them.
    expect((await api('GET', '/submissions', undefined, bob.apiKey)).json.data).toEqual([]);
  });

  it('includes archived submissions unless `archived` is given', async () => {
    const [s] = await createSubmission([{ email: 'arch@example.test' }]);
    const archived = await api('DELETE', `/submissions/${s!.submission_id}`);
    expect(archived.status).toBe(200);
    expect(archived.json).toEqual({ id: s!.submission_id, archived_at: expect.stringMatching(/Z$/) });
    expect(openApiErrors('delete', '/submissions/{id}', archived.json)).toEqual([]);
    const ids = (query: string) =>
      api('GET', `/submissions?limit=100${query}`).then((r) => r.json.data.map((x: { id: number }) => x.id));
    expect(await ids('')).toContain(s!.submission_id);
    expect(await ids('&archived=true')).toEqual([s!.submission_id]);
    expect(await ids('&archived=false')).not.toContain(s!.submission_id);
  });

  it('loads a 100-item page in a constant number of queries', async () => {
    const carol = await t.createAccount({ email: 'carol@read.test' });
    const template = await api('POST', `/templates/${templateId}/clone`, {}, alice.apiKey);
    const post = (key: string, body: unknown) => api('POST', '/submissions', body, key);
    // Carol needs her own template.
    const own = await api(
      'POST',
      '/templates/pdf',
      {
        name: 'Carol',
        documents: [{ name: 'c', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
        fields: [
          { name: 'A', role: 'One', areas: [{ x: 1, y: 1, w: 10, h: 10, page: 1 }] },
          { name: 'B', role: 'Two', areas: [{ x: 1, y: 20, w: 10, h: 10, page: 1 }] },
        ],
      },
      carol.apiKey,
    );
    void template;
    const reads = () => t.queries.filter((sql) => /^\s*SELECT/i.test(sql)).length;
    await post(carol.apiKey, { template_id: own.json.id, submitters: [{ email: 'a@x.test' }, { email: 'b@x.test' }] });
    // Background jobs (the emails of new submissions) use the same client: count only the request's.
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    /** SELECTs of one GET: items rendered on the first read after a change, kept for the next. */
    const countReads = async () => {
      await t.resetQueries();
      const { json } = await api('GET', '/submissions?limit=100', undefined, carol.apiKey);
      await t.settleQueries();
      return { items: json.data.length, rendering: reads() };
    };
    const oneCold = await countReads();
    await t.resetQueries();
    const oneKept = await countReads();
    expect(oneCold.items).toBe(1);
    for (let i = 0; i < 100; i += 1)
      await post(carol.apiKey, {
        template_id: own.json.id,
        submitters: [{ email: `a${i}@x.test` }, { email: `b${i}@x.test` }],
      });
    await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
    const hundredCold = await countReads();
    const hundredKept = await countReads();
    expect(hundredCold).toEqual({ items: 100, rendering: oneCold.rendering });
    expect(hundredKept).toEqual({ items: 100, rendering: oneKept.rendering });
    // Cold: the key, the page's ids, the items' stamps, the read models (one query) and the folder names
    // (rest-compat/serializers/submission-list.ts; the items are then stored by one WITH … UPDATE).
    const withOne = oneCold.rendering;
    expect(withOne).toBeLessThanOrEqual(5);
  });
});

describe('one submission', () => {
  it('GET /submissions/{id} in the get shape with events and documents; 403 and 404', async () => {
    const [tenant] = await createSubmission([
      { role: 'Tenant', email: 'get@example.test', completed: true, values: { 'Tenant Name': 'Gwen' } },
      { role: 'Landlord', email: 'll@example.test' },
    ]);
    // The completed party's documents are produced by the completion job.
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const { status, json } = await api('GET', `/submissions/${tenant!.submission_id}`);
    expect(status).toBe(200);
    expect(openApiErrors('get', '/submissions/{id}', json)).toEqual([]);
    // The API completion, and the request the next party was then sent (outbox mailer).
    expect(json.submission_events).toEqual([
      {
        id: expect.any(Number),
        submitter_id: tenant!.id,
        event_type: 'api_complete_form',
        event_timestamp: expect.stringMatching(/Z$/),
        data: {},
      },
      {
        id: expect.any(Number),
        submitter_id: json.submitters[1].id,
        event_type: 'send_email',
        event_timestamp: expect.stringMatching(/Z$/),
        // Its stored data (provider, attempt, to) is not among the keys DocuSeal shows.
        data: {},
      },
    ]);
    expect(json.documents).toEqual([]);
    expect(json.submitters[0]).toMatchObject({
      status: 'completed',
      values: [{ field: 'Tenant Name', value: 'Gwen' }],
    });
    expect(json.submitters[0].documents).toEqual([{ name: 'lease', url: expect.stringContaining('/file/') }]);
    // Not everyone has completed: the submission has no documents yet.
    expect(json.documents).toEqual([]);
    expect(await api('GET', `/submissions/${tenant!.submission_id}`, undefined, bob.apiKey)).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect((await api('GET', '/submissions/99999999')).status).toBe(404);
    const documents = await api('GET', `/submissions/${tenant!.submission_id}/documents`);
    // Not completed: the documents as filled so far (test/submission-documents.test.ts reads them).
    expect(documents.json).toEqual({
      id: tenant!.submission_id,
      documents: [{ name: 'lease', url: expect.stringContaining('/file/') }],
    });
    expect(openApiErrors('get', '/submissions/{id}/documents', documents.json)).toEqual([]);
    expect((await api('GET', `/submissions/${tenant!.submission_id}/documents`, undefined, bob.apiKey)).status).toBe(
      403,
    );
  });

  it('PUT /submissions/{id} changes name and expiry; a past expire_at makes it expired', async () => {
    const [s] = await createSubmission([{ email: 'exp@example.test' }]);
    const { status, json } = await api('PUT', `/submissions/${s!.submission_id}`, {
      name: 'Renamed',
      expire_at: '2001-01-01 00:00:00',
    });
    expect(status).toBe(200);
    expect(json).toMatchObject({ name: 'Renamed', expire_at: '2001-01-01T00:00:00.000Z', status: 'expired' });
    expect(json).not.toHaveProperty('submission_events');
    const cleared = await api('PUT', `/submissions/${s!.submission_id}`, { submission: { expire_at: null } });
    expect(cleared.json).toMatchObject({ expire_at: null, status: 'pending' });
    expect((await api('PUT', `/submissions/${s!.submission_id}`, { name: 'x' }, bob.apiKey)).status).toBe(403);
    expect((await api('DELETE', `/submissions/${s!.submission_id}`, undefined, bob.apiKey)).status).toBe(403);
    expect((await api('DELETE', '/submissions/99999999')).status).toBe(404);
  });
});

describe('submitters', () => {
  it('GET /submitters lists the read shape with filters; GET /submitters/{id}', async () => {
    const [x] = await createSubmission([
      { role: 'Tenant', email: 'filter@example.test', name: 'Filtered', external_id: 'ext-9' },
    ]);
    // Its request email is sent by a job: wait for it, so the events are known (no race).
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const list = await api('GET', `/submitters?submission_id=${x!.submission_id}`);
    expect(list.status).toBe(200);
    expect(openApiErrors('get', '/submitters', list.json)).toEqual([]);
    expect(list.json.data.map((s: { id: number }) => s.id)).toEqual([x!.id]);
    expect(list.json.data[0]).toMatchObject({
      template: { id: templateId, name: 'Lease' },
      submission_events: [
        {
          id: expect.any(Number),
          submitter_id: x!.id,
          event_type: 'send_email',
          event_timestamp: expect.stringMatching(/Z$/),
        },
      ],
      values: [],
      documents: [],
      external_id: 'ext-9',
    });
    expect((await api('GET', '/submitters?q=filtered')).json.data.map((s: { id: number }) => s.id)).toEqual([x!.id]);
    expect((await api('GET', '/submitters?external_id=ext-9')).json.data.map((s: { id: number }) => s.id)).toEqual([
      x!.id,
    ]);
    expect((await api('GET', '/submitters?application_key=ext-9')).json.data.map((s: { id: number }) => s.id)).toEqual([
      x!.id,
    ]);
    expect(
      (await api('GET', '/submitters?completed_after=2000-01-01')).json.data.every(
        (s: { completed_at: string | null }) => s.completed_at,
      ),
    ).toBe(true);
    const one = await api('GET', `/submitters/${x!.id}`);
    expect(openApiErrors('get', '/submitters/{id}', one.json)).toEqual([]);
    expect(one.json.id).toBe(x!.id);
    expect(await api('GET', `/submitters/${x!.id}`, undefined, bob.apiKey)).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect((await api('GET', '/submitters/99999999')).status).toBe(404);
  });

  it('PUT /submitters/{id} updates details and values, completes, then refuses further changes', async () => {
    const [x] = await createSubmission([{ role: 'Tenant', email: 'put@example.test' }]);
    const updated = await api('PUT', `/submitters/${x!.id}`, {
      name: 'Putty',
      values: { tenant_name: 'Putty P' },
      external_id: 'p-1',
    });
    expect(updated.status, JSON.stringify(updated.json)).toBe(200);
    expect(openApiErrors('put', '/submitters/{id}', updated.json)).toEqual([]);
    expect(updated.json).toMatchObject({
      name: 'Putty',
      external_id: 'p-1',
      values: [{ field: 'Tenant Name', value: 'Putty P' }],
      embed_src: expect.stringContaining('/s/'),
    });
    const done = await api('PUT', `/submitters/${x!.id}`, { submitter: { completed: true } });
    expect(done.json.status).toBe('completed');
    const again = await api('PUT', `/submitters/${x!.id}`, { name: 'Late' });
    expect(again).toEqual({ status: 422, json: { error: 'Submitter has already completed the submission.' } });
    expect((await api('PUT', `/submitters/${x!.id}`, { name: 'x' }, bob.apiKey)).status).toBe(403);
    expect((await api('PUT', '/submitters/99999999', { name: 'x' })).status).toBe(404);
    const bad = await createSubmission([{ email: 'bad@example.test' }]);
    expect((await api('PUT', `/submitters/${bad[0]!.id}`, { email: 'nope' })).status).toBe(422);
  });
});
