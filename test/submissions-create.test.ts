/**
 * Creating submissions over DocuSeal's REST routes: role mapping (§7.2), validation messages
 * (§7.1), who is sent the request at creation (§7.3), prefill (§7.5), the earlier request
 * shapes, and the response shapes (validated against the OpenAPI schemas).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, buyerSellerTemplateBody, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const api = (method: string, path: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, path, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@submissions.test' });
  bob = await t.createAccount({ email: 'bob@submissions.test' });
  const { json } = await api('POST', '/templates/pdf', buyerSellerTemplateBody('Purchase', 'purchase'));
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
});

describe('POST /submissions', () => {
  it('creates a submission and answers with the submitters in the create shape', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        {
          role: 'Buyer',
          email: 'Buyer@Example.test',
          name: 'Bea Buyer',
          external_id: 'b-1',
          metadata: { crm: 7 },
          values: { 'Full Name': 'Bea B.', amount: '1,250.5', agree: 'yes' },
        },
        { role: 'Seller', email: 'seller@example.test' },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('post', '/submissions', json)).toEqual([]);
    expect(json).toHaveLength(2);
    const [buyer, seller] = json;
    expect(Object.keys(buyer)).toEqual([
      'id',
      'submission_id',
      'uuid',
      'email',
      'slug',
      'sent_at',
      'opened_at',
      'completed_at',
      'declined_at',
      'created_at',
      'updated_at',
      'name',
      'phone',
      'external_id',
      'metadata',
      'status',
      'application_key',
      'preferences',
      'role',
      // Signet's extension (docs/compatibility.md "The signer's language").
      'language',
      'values',
      'embed_src',
    ]);
    expect(buyer).toMatchObject({
      email: 'buyer@example.test',
      name: 'Bea Buyer',
      role: 'Buyer',
      external_id: 'b-1',
      application_key: 'b-1',
      metadata: { crm: 7 },
      status: 'sent',
      preferences: { send_email: true, send_sms: false },
      embed_src: `${t.url}/s/${buyer.slug}`,
    });
    expect(buyer.sent_at).toMatch(/Z$/);
    expect(buyer.values).toEqual([
      { field: 'Full Name', value: 'Bea B.' },
      { field: 'Amount', value: 1250.5 },
      { field: 'Agree', value: true },
    ]);
    // Preserved order: the second party waits.
    expect(seller).toMatchObject({
      role: 'Seller',
      status: 'awaiting',
      sent_at: null,
      submission_id: buyer.submission_id,
    });
    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: buyer.submission_id } });
    expect(submission).toMatchObject({ source: 'api', submittersOrder: 'preserved', templateId });
  });

  it('keeps its own copy of the template: later template edits do not change it', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Buyer', email: 'copy@example.test' }],
    });
    await api('PUT', `/templates/${templateId}`, { roles: ['Purchaser', 'Vendor'] });
    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: json[0].submission_id } });
    expect((submission.templateSubmitters as { name: string }[]).map((r) => r.name)).toEqual(['Buyer']);
    await api('PUT', `/templates/${templateId}`, { roles: ['Buyer', 'Seller'] });
  });

  it('sends everyone at once with order random, and nobody with send_email false', async () => {
    const random = await api('POST', '/submissions', {
      template_id: templateId,
      order: 'random',
      submitters: [
        { role: 'Buyer', email: 'r1@example.test' },
        { role: 'Seller', email: 'r2@example.test' },
      ],
    });
    expect(random.json.map((s: { status: string }) => s.status)).toEqual(['sent', 'sent']);
    const quiet = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ email: 'q@example.test' }],
    });
    expect(quiet.json[0]).toMatchObject({ status: 'awaiting', sent_at: null, preferences: { send_email: false } });
  });

  it('maps roles by uuid, then name case-insensitively, then position; drops extra parties', async () => {
    const template = (await api('GET', `/templates/${templateId}`)).json;
    const byUuid = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ uuid: template.submitters[1].uuid, email: 'u@example.test' }],
    });
    expect(byUuid.json[0].role).toBe('Seller');
    const byName = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'sELLER', email: 'n@example.test' }],
    });
    expect(byName.json[0].role).toBe('Seller');
    const byPosition = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Nobody', email: 'p1@example.test' },
        { email: 'p2@example.test' },
        { email: 'p3@example.test' },
      ],
    });
    expect(byPosition.json.map((s: { role: string }) => s.role)).toEqual(['Buyer', 'Seller']);
    const twice = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ email: 'a@example.test' }, { role: 'Buyer', email: 'b@example.test' }],
    });
    expect(twice).toEqual({ status: 422, json: { error: 'Defined more signing parties than in template' } });
  });

  it('answers bad requests with DocuSeal’s 422 messages, creating nothing', async () => {
    const before = await t.db.submission.count();
    const cases: [unknown, string][] = [
      [{ submitters: [{ email: 'x@example.test' }] }, 'Template not found'],
      [{ template_id: templateId }, 'submitters is required'],
      [{ template_id: templateId, submitters: [] }, 'submitters is required'],
      [{ template_id: templateId, submitters: { email: 'x@example.test' } }, 'submitters must be a Array'],
      [{ template_id: templateId, submitters: ['x'] }, '0 must be a Object in `submitters`.'],
      [
        { template_id: templateId, submitters: [{ role: 'Buyer' }] },
        'email or phone or name is required in `submitters[0]`.',
      ],
      [{ template_id: templateId, submitters: [{ email: 'not-an-email' }] }, 'email is invalid in `submitters[0]`.'],
      [
        { template_id: templateId, submitters: [{ email: 'a@example.test' }, { phone: '555-1234' }] },
        'phone should start with +<country code> and contain only digits in `submitters[1]`.',
      ],
      [
        {
          template_id: templateId,
          submitters: [
            { role: 'Buyer', email: 'a@example.test' },
            { role: 'buyer', email: 'b@example.test' },
          ],
        },
        'role must be unique in `submitters`.',
      ],
      [
        { template_id: templateId, order: 'sideways', submitters: [{ email: 'a@example.test' }] },
        'order must be one of preserved, random',
      ],
      [
        { template_id: templateId, message: { subject: 'Hi' }, submitters: [{ email: 'a@example.test' }] },
        'body is required in `message`.',
      ],
      [
        { template_id: templateId, reply_to: 'nope', submitters: [{ email: 'a@example.test' }] },
        'reply_to email is invalid',
      ],
      [
        { template_id: templateId, submitters: [{ email: 'a@example.test', fields: [{ default_value: 'x' }] }] },
        'name or uuid is required in `submitters[0].fields[0]`.',
      ],
      [
        {
          template_id: templateId,
          submitters: [{ email: 'a@example.test', fields: [{ name: 'Nope', default_value: 'x' }] }],
        },
        'Unknown field: Nope',
      ],
    ];
    for (const [body, error] of cases) {
      const response = await api('POST', '/submissions', body);
      expect(response, JSON.stringify(body)).toEqual({ status: 422, json: { error } });
    }
    expect(await t.db.submission.count()).toBe(before);
  });

  it('stores no attachment when a later part of the request is refused', async () => {
    const files = await t.db.storedFile.count();
    const response = await api('POST', '/submissions', {
      template_id: templateId,
      submissions: [
        { submitters: [{ role: 'Seller', email: 's@example.test', values: { 'Stamp Image': PNG_1PX } }] },
        { submitters: [{ email: 'a@example.test', fields: [{ name: 'Nope', default_value: 'x' }] }] },
      ],
    });
    expect(response).toEqual({ status: 422, json: { error: 'Unknown field: Nope' } });
    expect(await t.db.storedFile.count()).toBe(files);
  });

  it('refuses archived templates, templates without fields, other accounts’ and unknown ones', async () => {
    const empty = await api('POST', '/templates/pdf', {
      name: 'Empty',
      documents: [{ name: 'e', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    });
    // DocuSeal's message first (a client matching it by its start still does), then which template.
    expect(
      (await api('POST', '/submissions', { template_id: empty.json.id, submitters: [{ email: 'a@example.test' }] }))
        .json,
    ).toEqual({
      error:
        `Template does not contain fields: template ${empty.json.id} ("Empty") has no fields to fill in or ` +
        `sign; add fields to it before creating submissions.`,
    });
    const archived = await api('POST', `/templates/${templateId}/clone`, {});
    await api('DELETE', `/templates/${archived.json.id}`);
    expect(
      (await api('POST', '/submissions', { template_id: archived.json.id, submitters: [{ email: 'a@example.test' }] }))
        .json,
    ).toEqual({
      error: 'Template has been archived',
    });
    expect(
      (
        await api(
          'POST',
          '/submissions',
          { template_id: templateId, submitters: [{ email: 'a@example.test' }] },
          bob.apiKey,
        )
      ).status,
    ).toBe(403);
    expect(
      (await api('POST', '/submissions', { template_id: 99999999, submitters: [{ email: 'a@example.test' }] })).status,
    ).toBe(404);
  });

  it('marks completed parties completed (api_complete_form) and sends the next one now', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Buyer', email: 'done@example.test', completed: true },
        { role: 'Seller', email: 'next@example.test' },
      ],
    });
    expect(json[0]).toMatchObject({ status: 'completed', sent_at: null });
    expect(json[0].completed_at).toMatch(/Z$/);
    // Completed parties list every own field, missing ones as null (§5.2).
    expect(json[0].values.map((v: { field: string }) => v.field)).toEqual(['Full Name', 'Phone', 'Amount', 'Agree']);
    expect(json[1].status).toBe('sent');
    // The next party's email job records send_email; wait for it so the list is the same every run.
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    const events = await t.db.submissionEvent.findMany({
      where: { submissionId: json[0].submission_id },
      orderBy: { id: 'asc' },
    });
    expect(events.map((e) => [e.eventType, e.submitterId])).toEqual([
      ['api_complete_form', json[0].id],
      ['send_email', json[1].id],
    ]);
  });

  it('sends parties in groups given by per-submitter order', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      order: 'random',
      submitters: [
        { role: 'Buyer', email: 'g1@example.test', order: 1 },
        { role: 'Seller', email: 'g0@example.test', order: 0 },
      ],
    });
    expect(json.map((s: { status: string }) => s.status)).toEqual(['awaiting', 'sent']);
  });

  it('prefills by parameterized names, moves phone values to the phone, stores signature images', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      order: 'random',
      submitters: [
        { role: 'Buyer', name: 'Pat', values: { full_name: 'Pat P', phone: '+15550001111' } },
        {
          role: 'Seller',
          email: 's@example.test',
          fields: [{ name: 'Stamp Image', default_value: PNG_1PX, readonly: true }],
          values: { 'Seller Signature': 'Sam Seller' },
        },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json[0]).toMatchObject({ phone: '+15550001111', values: [{ field: 'Full Name', value: 'Pat P' }] });
    const seller = json[1];
    // A typed signature: its image URL, then its text (test/typed-signatures.test.ts).
    expect(seller.values[0]).toEqual({ field: 'Seller Signature', value: expect.stringMatching(/signature\.png$/) });
    expect(seller.values[1]).toEqual({ field: 'Seller Signature', value: 'Sam Seller' });
    expect(seller.values[2].field).toBe('Stamp Image');
    const image = await fetch(seller.values[2].value);
    expect(image.status).toBe(200);
    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: seller.submission_id } });
    const stamp = (submission.templateFields as { name: string; readonly?: boolean }[]).find(
      (f) => f.name === 'Stamp Image',
    );
    expect(stamp?.readonly).toBe(true);
  });
});

describe('the other create routes', () => {
  it('POST /submissions/init answers {id, submitters, expire_at, created_at}', async () => {
    const { json } = await api('POST', '/submissions/init', {
      template_id: templateId,
      expire_at: '2030-01-02 03:04:05',
      submitters: [{ email: 'init@example.test' }],
    });
    expect(Object.keys(json)).toEqual(['id', 'submitters', 'expire_at', 'created_at']);
    expect(json.expire_at).toBe('2030-01-02T03:04:05.000Z');
    expect(json.submitters[0].submission_id).toBe(json.id);
  });

  it('POST /templates/{id}/submissions takes the template from the path', async () => {
    const { status, json } = await api('POST', `/templates/${templateId}/submissions`, {
      submitters: [{ email: 'path@example.test' }],
    });
    expect(status).toBe(200);
    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: json[0].submission_id } });
    expect(submission.templateId).toBe(templateId);
  });

  it('POST /submissions/emails makes one submission per address, to the first role, random order', async () => {
    const { status, json } = await api('POST', '/submissions/emails', {
      template_id: templateId,
      emails: 'one@example.test, two@example.test;one@example.test',
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('post', '/submissions/emails', json)).toEqual([]);
    expect(json.map((s: { email: string; role: string }) => [s.email, s.role])).toEqual([
      ['one@example.test', 'Buyer'],
      ['two@example.test', 'Buyer'],
    ]);
    expect(json[0].submission_id).not.toBe(json[1].submission_id);
    expect((await api('POST', '/submissions/emails', { template_id: templateId })).json).toEqual({
      error: 'emails or email is required',
    });
    expect(
      (await api('POST', '/submissions/emails', { template_id: templateId, emails: 'nothing here' })).json,
    ).toEqual({ error: 'emails are invalid' });
  });

  it('accepts the earlier shapes: submission: {submitters} and submissions: [...]', async () => {
    const one = await api('POST', '/submissions', {
      template_id: templateId,
      submission: { submitters: [{ email: 'legacy@example.test', application_key: 'k1' }] },
    });
    expect(one.json[0]).toMatchObject({ email: 'legacy@example.test', external_id: 'k1' });
    const two = await api('POST', '/submissions', {
      template_id: templateId,
      submissions: [{ submitters: [{ email: 'l1@example.test' }] }, { submitters: [{ email: 'l2@example.test' }] }],
    });
    expect(two.json).toHaveLength(2);
    expect(two.json[0].submission_id).not.toBe(two.json[1].submission_id);
  });
});
