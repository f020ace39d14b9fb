/**
 * The create routes read their answer back in one plain statement
 * (src/submissions/created-read-models.ts) instead of resolving the GraphQL
 * `RestCreatedSubmitter` fragment. The answer must be exactly what the fragment + serializer
 * make of the same submitters: same keys in the same order, same values, for prefilled values of
 * every kind (text, number, checkbox, typed signature, stored image), completed parties (every
 * own field listed), per-submitter messages (hidden from preferences), metadata, phones, several
 * submissions in one request, /submissions/emails and /submissions/init.
 *
 * Also: the create itself writes the submission, its submitters and the api_complete_form events
 * as before (through GraphQL too, with any selection of the payload).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import {
  serializeCreatedSubmitter,
  SUBMITTER_CREATE_FRAGMENT,
  type CreatedSubmitterData,
} from '../src/docuseal-shapes/submitter.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { buyerSellerTemplateBody } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

/** File URLs carry a signature and an expiry minted per request: compare what they point at. */
const withoutTokens = (json: string) => json.replace(/\/file\/[^/"]+\//g, '/file/TOKEN/');

/** The submitters of these submissions through the GraphQL fragment and the serializer, in id order. */
async function throughFragment(submissionIds: number[]) {
  const out: ReturnType<typeof serializeCreatedSubmitter>[] = [];
  for (const id of [...new Set(submissionIds)].sort((a, b) => a - b)) {
    const { body } = await graphql(
      t.url,
      `query ($id: Int) { submitters(submissionId: $id, limit: 100) { nodes { ...RestCreatedSubmitter } } } ` +
        `${SUBMITTER_CREATE_FRAGMENT}`,
      {
        key: alice.apiKey,
        variables: { id },
      },
    );
    expect(body.errors).toBeUndefined();
    out.push(
      ...body.data.submitters.nodes
        .map((n: CreatedSubmitterData) => serializeCreatedSubmitter(n))
        .sort((a: { id: number }, b: { id: number }) => a.id - b.id),
    );
  }
  return out;
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Ελληνικά & Co', email: 'alice@create-sql.test' });
  const { json } = await api('POST', '/templates/pdf', buyerSellerTemplateBody('Create «SQL»', 'doc'));
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
});

describe('the create answer read back in one statement', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    [
      'two parties in order, with values, metadata, a message and an external id',
      '/submissions',
      {
        submitters: [
          {
            role: 'Buyer',
            email: 'Buyer@X.test',
            name: 'Zoë',
            external_id: 'b-1',
            metadata: { n: 1, nested: { a: [1, 'b'] } },
            values: { 'Full Name': 'Bea «B»', amount: '1,250.5', agree: 'yes' },
            message: { subject: 'S', body: 'B' },
          },
          { role: 'Seller', email: 'seller@x.test', phone: '+14155550123', send_sms: false },
        ],
      },
    ],
    [
      'a completed party (every own field listed) and the next one sent',
      '/submissions',
      {
        submitters: [
          { role: 'Buyer', email: 'done@x.test', completed: true, values: { 'Full Name': 'Ada' } },
          { role: 'Seller', email: 'next@x.test' },
        ],
      },
    ],
    [
      'a typed signature and a stored image, random order',
      '/submissions',
      {
        order: 'random',
        submitters: [
          { role: 'Buyer', name: 'Pat', values: { full_name: 'Pat P', phone: '+15550001111' } },
          {
            role: 'Seller',
            email: 's@x.test',
            fields: [{ name: 'Stamp Image', default_value: PNG_1PX, readonly: true }],
            values: { 'Seller Signature': 'Sam Seller' },
          },
        ],
      },
    ],
    [
      'several submissions in one request (the earlier shape)',
      '/submissions',
      {
        submissions: [
          { submitters: [{ email: 'l1@x.test' }] },
          { submitters: [{ email: 'l2@x.test', completed: true }] },
        ],
      },
    ],
    [
      'nobody sent (send_email false)',
      `/templates/{id}/submissions`,
      {
        send_email: false,
        submitters: [{ email: 'quiet@x.test', completed_redirect_url: 'https://example.test/done' }],
      },
    ],
    ['one submission per address', '/submissions/emails', { emails: 'one@x.test, two@x.test' }],
  ];

  for (const [name, path, body] of cases) {
    it(`equals the GraphQL fragment through the serializer: ${name}`, async () => {
      const { status, json } = await api('POST', path.replace('{id}', String(templateId)), {
        template_id: templateId,
        ...body,
      });
      expect(status, JSON.stringify(json)).toBe(200);
      const expected = await throughFragment(json.map((s: { submission_id: number }) => s.submission_id));
      expect(json.length).toBeGreaterThan(0);
      expect(withoutTokens(JSON.stringify(json))).toBe(withoutTokens(JSON.stringify(expected)));
    });
  }

  it('serves the stored image of a prefilled value at its URL', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Seller', email: 'img@x.test', values: { 'Stamp Image': PNG_1PX } }],
    });
    const image = json[0].values.find((v: { field: string }) => v.field === 'Stamp Image');
    const response = await fetch(image.value);
    expect(response.status).toBe(200);
    // Kept as mupdf re-encodes it from the decoded pixels (src/documents/drawable-image.ts): a
    // PNG of the same size, not the same bytes.
    const served = Buffer.from(await response.arrayBuffer());
    expect(served.subarray(0, 8).equals(Buffer.from(PNG_1PX, 'base64').subarray(0, 8))).toBe(true);
    expect([served.readUInt32BE(16), served.readUInt32BE(20)]).toEqual([1, 1]);
  });

  it('POST /submissions/init answers the submission’s id, expire_at and created_at as GraphQL does', async () => {
    const { json } = await api('POST', '/submissions/init', {
      template_id: templateId,
      expire_at: '2030-01-02 03:04:05',
      submitters: [{ email: 'init@x.test' }],
    });
    const { body } = await graphql(t.url, `query ($id: Int!) { submission(id: $id) { id expireAt createdAt } }`, {
      key: alice.apiKey,
      variables: { id: json.id },
    });
    expect(json).toEqual({
      id: body.data.submission.id,
      submitters: await throughFragment([json.id]),
      expire_at: body.data.submission.expireAt,
      created_at: body.data.submission.createdAt,
    });
    expect(json.expire_at).toBe('2030-01-02T03:04:05.000Z');
  });
});

describe('what the create reads', () => {
  it('a template changed since the last create is read anew (its parsed fields are kept per row version)', async () => {
    const first = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Buyer', email: 'v1@x.test', values: { 'Full Name': 'A' } }],
    });
    expect(first.json[0]).toMatchObject({ role: 'Buyer', values: [{ field: 'Full Name', value: 'A' }] });
    expect((await api('PUT', `/templates/${templateId}`, { roles: ['Purchaser', 'Vendor'] })).status).toBe(200);
    const renamed = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Purchaser', email: 'v2@x.test' }],
    });
    expect(renamed.status, JSON.stringify(renamed.json)).toBe(200);
    expect(renamed.json[0].role).toBe('Purchaser');
    // A change made by any means (here plain SQL, no updated_at) is seen too.
    await t.db.$executeRaw`
      UPDATE templates SET submitters = jsonb_set(submitters, '{0,name}', '"Client"') WHERE id = ${templateId}`;
    const bySql = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Client', email: 'v3@x.test' }],
    });
    expect(bySql.json[0].role).toBe('Client');
    expect((await api('PUT', `/templates/${templateId}`, { roles: ['Buyer', 'Seller'] })).status).toBe(200);
    const back = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Buyer', email: 'v4@x.test' }],
    });
    expect(back.json[0].role).toBe('Buyer');
    // An archived template is refused even when its fields are known.
    const clone = await api('POST', `/templates/${templateId}/clone`, {});
    expect(
      (await api('POST', '/submissions', { template_id: clone.json.id, submitters: [{ email: 'c@x.test' }] })).status,
    ).toBe(200);
    await api('DELETE', `/templates/${clone.json.id}`);
    expect(
      await api('POST', '/submissions', { template_id: clone.json.id, submitters: [{ email: 'c@x.test' }] }),
    ).toEqual({ status: 422, json: { error: 'Template has been archived' } });
  });
});

describe('a template used before', () => {
  const readsTemplate = (sql: string) => /FROM templates t\s+WHERE t\.id = \$1/.test(sql);

  it('is not read again while unchanged: one statement writes the submission', async () => {
    await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Buyer', email: 'warm@x.test' }],
    });
    await t.resetQueries();
    const { status } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Buyer', email: 'known@x.test' },
        { role: 'Seller', email: 's@x.test' },
      ],
    });
    expect(status).toBe(200);
    await t.settleQueries();
    const inRequest = t.queries.filter((q) => !/agenda|jobs/.test(q));
    expect(inRequest.some(readsTemplate)).toBe(false);
    expect(inRequest.filter((q) => /INSERT INTO submissions/.test(q))).toHaveLength(1);
  });

  it('a refusal judged on it as last read is judged again on the template as it is', async () => {
    await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Buyer', email: 'warm2@x.test' }],
    });
    // A field added behind the service's back (plain SQL): the request names it.
    await t.db.$executeRaw`
      UPDATE templates
         SET fields = fields || jsonb_build_array(jsonb_build_object(
               'uuid', gen_random_uuid()::text, 'submitter_uuid', submitters->0->>'uuid', 'name', 'Nickname',
               'type', 'text', 'required', false, 'areas', '[]'::jsonb))
       WHERE id = ${templateId}`;
    try {
      const { status, json } = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [{ role: 'Buyer', email: 'nick@x.test', fields: [{ name: 'Nickname', default_value: 'Bee' }] }],
      });
      expect(status, JSON.stringify(json)).toBe(200);
      expect(json[0].values).toEqual([{ field: 'Nickname', value: 'Bee' }]);
      // Refusals still come, for what the template really lacks.
      expect(
        await api('POST', '/submissions', {
          template_id: templateId,
          submitters: [{ email: 'x@x.test', fields: [{ name: 'Nope', default_value: 'x' }] }],
        }),
      ).toEqual({
        status: 422,
        json: { error: 'Unknown field: Nope' },
      });
    } finally {
      await t.db.$executeRaw`
        UPDATE templates
           SET fields = (SELECT jsonb_agg(f) FROM jsonb_array_elements(fields) f WHERE f->>'name' <> 'Nickname')
         WHERE id = ${templateId}`;
    }
  });

  it('another account’s template is refused even when known', async () => {
    const other = await t.createAccount({ email: 'other@create-sql.test' });
    expect(
      (
        await rest(t.url, other.apiKey, 'POST', '/submissions', {
          template_id: templateId,
          submitters: [{ email: 'o@x.test' }],
        })
      ).status,
    ).toBe(403);
  });
});

describe('what the create writes', () => {
  it('stores the submission, its parties and the api_complete_form events, all at one time', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      name: 'Written',
      variables: { amount: 3 },
      bcc_completed: 'bcc@x.test',
      message: { subject: 'Hello', body: 'Body {{submitter.link}}' },
      submitters: [
        { role: 'Buyer', email: 'w1@x.test', completed: true },
        { role: 'Seller', email: 'w2@x.test', completed: true },
      ],
    });
    const submission = await t.db.submission.findUniqueOrThrow({
      where: { id: json[0].submission_id },
      include: { submitters: { orderBy: { id: 'asc' } }, events: { orderBy: { id: 'asc' } } },
    });
    expect(submission).toMatchObject({
      accountId: alice.accountId,
      templateId,
      createdByUserId: alice.userId,
      name: 'Written',
      source: 'api',
      submittersOrder: 'preserved',
      variables: { amount: 3 },
      preferences: { bcc_completed: 'bcc@x.test', message: { subject: 'Hello', body: 'Body {{submitter.link}}' } },
    });
    // Its own copy of the documents, in order.
    const documents = await t.db.templateDocument.findMany({ where: { templateId }, orderBy: { position: 'asc' } });
    expect(submission.templateSchema).toEqual(
      documents.map((d) => ({ attachment_uuid: d.uuid, name: d.name, file_id: d.fileId })),
    );
    // Everyone completed at creation: the submission is completed at the same instant.
    expect(submission.completedAt).toEqual(submission.createdAt);
    expect(submission.updatedAt).toEqual(submission.createdAt);
    expect(submission.submitters.map((s) => [s.email, s.orderIndex, s.completedAt?.getTime(), s.sentAt])).toEqual([
      ['w1@x.test', 0, submission.createdAt.getTime(), null],
      ['w2@x.test', 1, submission.createdAt.getTime(), null],
    ]);
    const completedEvents = submission.events.filter((e) => e.eventType === 'api_complete_form');
    expect(completedEvents.map((e) => [e.submitterId, e.eventTimestamp.getTime()])).toEqual(
      submission.submitters.map((s) => [s.id, submission.createdAt.getTime()]),
    );
    expect(Math.abs(submission.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('works through GraphQL with the payload’s submissions, submitters and ids', async () => {
    const { body } = await graphql(
      t.url,
      `mutation ($input: CreateSubmissionsInput!) { createSubmissions(input: $input) { submissionIds submissions { ` +
        `id status submitters { email role } } submitters { email status role embedSrc } } }`,
      {
        key: alice.apiKey,
        variables: {
          input: {
            templateId,
            submitters: [
              { role: 'Seller', email: 'g2@x.test' },
              { role: 'Buyer', email: 'g1@x.test' },
            ],
          },
        },
      },
    );
    expect(body.errors).toBeUndefined();
    const payload = body.data.createSubmissions;
    expect(payload.submissionIds).toEqual([payload.submissions[0].id]);
    expect(payload.submissions[0]).toMatchObject({
      status: 'pending',
      submitters: [
        { email: 'g2@x.test', role: 'Seller' },
        { email: 'g1@x.test', role: 'Buyer' },
      ],
    });
    expect(payload.submitters.map((s: { email: string; status: string }) => [s.email, s.status])).toEqual([
      ['g2@x.test', 'sent'],
      ['g1@x.test', 'awaiting'],
    ]);
  });
});
