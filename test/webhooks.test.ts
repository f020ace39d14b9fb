/**
 * Webhooks end to end on a real service and a loopback receiver (WEBHOOK_ALLOW_PRIVATE): endpoint
 * management over GraphQL (defaults, validation, update, delete, cross-account), each event's
 * payload field by field against the REST API's answer for the same record, the headers and the
 * signature recomputed here, the custom header, the test event, redelivery, secret rotation
 * (both secrets valid for 24 hours), the dispatch's idempotency, and a constant query count for
 * the deliveries list.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { EVENT_TYPES, type DomainEvent, type EventType } from '../src/events/events.ts';
import { dispatchEvent } from '../src/webhooks/dispatch-event.ts';
import { WEBHOOK_DESTINATION_REFUSED } from '../src/webhooks/send-request.ts';
import { createPayloadBuilder } from '../src/webhooks/payloads.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { ROOT } from './helpers/processes.ts';
import { signatureMatches, startReceiver, type ReceivedRequest, type Receiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let receiver: Receiver;
let alice: CreatedAccount;
let bob: CreatedAccount;
let endpoint: { id: number; secret: string };
let templateId: number;

const api = (method: string, p: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, p, body);
const gql = (query: string, variables: Record<string, unknown> = {}, key = alice.apiKey) =>
  graphql(t.url, query, { key, variables });

const CREATE = /* GraphQL */ `
  mutation ($input: CreateWebhookEndpointInput!) {
    createWebhookEndpoint(input: $input) {
      secret endpoint { id url events headerName headerValue enabled previousSecretExpiresAt }
    }
  }
`;

/** Emits events as the services do (one dispatch-event job each). */
const emit = (events: Omit<DomainEvent, 'at'>[]) => t.app.effects.emit(events.map((e) => ({ ...e, at: new Date() })));

/** The requests for event `type` about record `id`. */
const received = (type: string, id: number) =>
  receiver.requests.filter((r) => r.json?.event_type === type && r.json?.data?.id === id);
const waitForEvent = async (type: string, id: number, count = 1): Promise<ReceivedRequest> => {
  await receiver.waitFor(() => received(type, id).length >= count);
  return received(type, id)[count - 1]!;
};

/** Signed file URLs differ by their token (expiry); compare them without it. */
const withoutTokens = (value: unknown) =>
  JSON.parse(JSON.stringify(value).replace(/\/file\/[^/"]+\//g, '/file/TOKEN/'));

/** The data properties DocuSeal's OpenAPI document gives each webhook. */
const openApiWebhook = JSON.parse(
  fs.readFileSync(path.join(ROOT, '..', 'shared', 'reference', 'docuseal-openapi.json'), 'utf8'),
).webhooks as Record<
  string,
  {
    post: {
      requestBody: {
        content: { 'application/json': { schema: { properties: { data: { properties: Record<string, unknown> } } } } };
      };
    };
  }
>;
const openApiDataKeys = (name: string) =>
  Object.keys(openApiWebhook[name]!.post.requestBody.content['application/json'].schema.properties.data.properties);

/** The fields the interface spec's Events section lists for form.* data. */
const SPEC_FORM_FIELDS = [
  'id',
  'submission_id',
  'email',
  'ua',
  'ip',
  'name',
  'phone',
  'role',
  'external_id',
  'application_key',
  'sent_at',
  'opened_at',
  'completed_at',
  'created_at',
  'updated_at',
  'status',
  'preferences',
  'submission',
  'template',
  'values',
  'metadata',
  'audit_log_url',
  'submission_url',
  'documents',
];

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startReceiver();
  alice = await t.createAccount({ email: 'alice@webhooks.test' });
  bob = await t.createAccount({ email: 'bob@webhooks.test' });
  const { body } = await gql(CREATE, {
    input: {
      url: `${receiver.url}/hooks/alice`,
      events: [...EVENT_TYPES],
      headerName: 'X-Test-Secret',
      headerValue: 's3cr3t value',
    },
  });
  expect(body.errors).toBeUndefined();
  endpoint = { id: body.data.createWebhookEndpoint.endpoint.id, secret: body.data.createWebhookEndpoint.secret };
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('endpoints', { timeout: 180_000 }, () => {
  it(
    'are created with a whsec_ secret shown once and the form.* events by default; ' + 'listing never shows the secret',
    async () => {
      const url = `${receiver.url}/hooks/defaults`;
      const { body } = await gql(CREATE, { input: { url } });
      expect(body.errors).toBeUndefined();
      const created = body.data.createWebhookEndpoint;
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/);
      expect(created.endpoint).toEqual({
        id: expect.any(Number),
        url,
        events: ['form.viewed', 'form.started', 'form.completed', 'form.declined'],
        headerName: null,
        headerValue: null,
        enabled: true,
        previousSecretExpiresAt: null,
      });
      const stored = await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: created.endpoint.id } });
      expect(stored.secret).toBe(created.secret);

      const list = await gql('{ webhookEndpoints { id url events } }');
      expect(list.body.data.webhookEndpoints.map((e: { id: number }) => e.id)).toEqual([
        endpoint.id,
        created.endpoint.id,
      ]);
      expect(JSON.stringify(list.body)).not.toContain('whsec_');
      // No field of the endpoint type gives the secret.
      const introspection = await gql('{ __type(name: "WebhookEndpoint") { fields { name } } }');
      expect(
        introspection.body.data.__type.fields
          .map((f: { name: string }) => f.name)
          .filter((n: string) => /secret/i.test(n)),
      ).toEqual(['previousSecretExpiresAt']);

      await gql('mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }', { id: created.endpoint.id });
    },
  );

  it('refuses bad URLs, unknown or no events and bad custom headers with VALIDATION, writing nothing', async () => {
    const before = await t.db.webhookEndpoint.count();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ url: 'ftp://files.example.com/x' }, /url must be an http or https URL/],
      [{ url: 'not a url' }, /url must be an http or https URL/],
      [{ url: '' }, /url is required/],
      [{ url: 'https://x.example', events: ['form.completed', 'form.exploded'] }, /unknown event type form\.exploded/],
      [{ url: 'https://x.example', events: [] }, /at least one event type/],
      [{ url: 'https://x.example', headerName: 'Bad Header', headerValue: 'v' }, /not a valid HTTP header name/],
      [{ url: 'https://x.example', headerName: 'X-Ok', headerValue: 'a\r\nInjected: yes' }, /line breaks/],
      [{ url: 'https://x.example', headerName: 'X-Ok' }, /headerValue is required/],
      [{ url: 'https://x.example', headerValue: 'v' }, /headerName is required/],
      [{ url: 'https://x.example', headerName: 'Content-Type', headerValue: 'text/plain' }, /Signet sets itself/],
    ];
    for (const [input, message] of cases) {
      const { body } = await gql(CREATE, { input });
      expect(body.errors?.[0]?.extensions?.code, JSON.stringify(input)).toBe('VALIDATION');
      expect(body.errors?.[0]?.message).toMatch(message);
    }
    expect(await t.db.webhookEndpoint.count()).toBe(before);
  });

  it(
    'refuse a URL delivery would refuse, in its words: ' +
      'a name that does not resolve, even with WEBHOOK_ALLOW_PRIVATE',
    async () => {
      const before = await t.db.webhookEndpoint.count();
      const created = await gql(CREATE, { input: { url: 'https://hooks.no-such-host.invalid/x' } });
      expect(created.body.errors?.[0]).toMatchObject({
        message: WEBHOOK_DESTINATION_REFUSED,
        extensions: { code: 'VALIDATION' },
      });
      expect(await t.db.webhookEndpoint.count()).toBe(before);
      const UPDATE =
        'mutation ($input: UpdateWebhookEndpointInput!) { updateWebhookEndpoint(input: $input) { endpoint { url } } }';
      const updated = await gql(UPDATE, { input: { id: endpoint.id, url: 'https://hooks.no-such-host.invalid/x' } });
      expect(updated.body.errors?.[0]).toMatchObject({
        message: WEBHOOK_DESTINATION_REFUSED,
        extensions: { code: 'VALIDATION' },
      });
      expect((await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } })).url).toBe(
        `${receiver.url}/hooks/alice`,
      );
    },
  );

  it('are updated (URL, events, header, enabled) and deleted; a disabled endpoint gets no deliveries', async () => {
    const { body } = await gql(CREATE, {
      input: { url: `${receiver.url}/hooks/second`, events: ['template.updated'], headerName: 'X-A', headerValue: '1' },
    });
    const id = body.data.createWebhookEndpoint.endpoint.id as number;
    const UPDATE =
      'mutation ($input: UpdateWebhookEndpointInput!) { updateWebhookEndpoint(input: $input) { ' +
      'endpoint { id url events headerName headerValue enabled } } }';
    const renamed = await gql(UPDATE, {
      input: { id, url: `${receiver.url}/hooks/second-v2`, events: ['template.updated', 'template.archived'] },
    });
    expect(renamed.body.data.updateWebhookEndpoint.endpoint).toEqual({
      id,
      url: `${receiver.url}/hooks/second-v2`,
      events: ['template.updated', 'template.archived'],
      headerName: 'X-A',
      headerValue: '1',
      enabled: true,
    });
    const bad = await gql(UPDATE, { input: { id, events: ['nope'] } });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    const noHeader = await gql(UPDATE, { input: { id, headerName: null, enabled: false } });
    expect(noHeader.body.data.updateWebhookEndpoint.endpoint).toMatchObject({
      headerName: null,
      headerValue: null,
      enabled: false,
    });

    await emit([{ type: 'template.updated', accountId: alice.accountId, recordId: 999_999 }]);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    expect(await t.db.webhookDelivery.count({ where: { endpointId: id } })).toBe(0);

    const deleted = await gql('mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }', { id });
    expect(deleted.body.data.deleteWebhookEndpoint).toEqual({ id });
    expect(await t.db.webhookEndpoint.findUnique({ where: { id } })).toBeNull();
    const again = await gql('mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }', { id });
    expect(again.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});

describe('payloads, headers and signature', { timeout: 180_000 }, () => {
  let client: { id: number; submission_id: number };
  let manager: { id: number };

  it('template.created and template.updated carry GET /templates/{id}', async () => {
    const pdf = await drawPdf([{ texts: [{ text: 'Agreement', x: 72, y: 72 }] }]);
    const created = await api('POST', '/templates/pdf', {
      name: 'Agreement',
      external_id: 'tpl-ext-1',
      documents: [{ name: 'agreement', file: base64(pdf) }],
      fields: [
        { name: 'Client Name', role: 'Client', areas: [{ x: 72, y: 120, w: 200, h: 20, page: 1 }] },
        { name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 200, w: 200, h: 20, page: 1 }] },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    templateId = created.json.id;

    const createdEvent = await waitForEvent('template.created', templateId);
    const get = await api('GET', `/templates/${templateId}`);
    expect(withoutTokens(createdEvent.json.data)).toEqual(withoutTokens(get.json));
    expect(Object.keys(createdEvent.json).sort()).toEqual(['data', 'event_type', 'timestamp']);
    expect(createdEvent.json.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    for (const key of openApiDataKeys('templateWebhook')) expect(createdEvent.json.data, key).toHaveProperty(key);

    await api('PUT', `/templates/${templateId}`, { name: 'Agreement v2' });
    const updated = await waitForEvent('template.updated', templateId);
    expect(updated.json.data.name).toBe('Agreement v2');
    expect(withoutTokens(updated.json.data)).toEqual(
      withoutTokens((await api('GET', `/templates/${templateId}`)).json),
    );
  });

  it('every request is a signed JSON POST with the user agent and the custom header', async () => {
    const request = (await waitForEvent('template.created', templateId))!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/hooks/alice');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('Signet-Webhooks/1.0');
    expect(request.headers['x-test-secret']).toBe('s3cr3t value');
    const signature = request.headers['x-docuseal-signature'] as string;
    expect(signature).toMatch(/^\d{10}\.[0-9a-f]{64}$/);
    expect(signatureMatches(signature, endpoint.secret, request.body)).toBe(true);
    // Any change to the body, the timestamp or the secret breaks it.
    expect(signatureMatches(signature, endpoint.secret, request.body.replace('Agreement', 'Agreemenu'))).toBe(false);
    expect(signatureMatches(signature, 'whsec_other', request.body)).toBe(false);
    const [timestamp] = signature.split('.');
    expect(signatureMatches(`${Number(timestamp) + 1}.${signature.split('.')[1]}`, endpoint.secret, request.body)).toBe(
      false,
    );
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(300);

    // The verifier printed in docs/webhooks.md accepts it and refuses a forgery.
    const docs = fs.readFileSync(path.join(ROOT, 'docs', 'webhooks.md'), 'utf8');
    const sample = /```js\n([\s\S]*?)```/.exec(docs)![1]!;
    const file = path.join(os.tmpdir(), `signet-verify-${process.pid}-${Date.now()}.mjs`);
    fs.writeFileSync(file, sample);
    try {
      const { verifyDocusealSignature } = await import(pathToFileURL(file).href);
      expect(verifyDocusealSignature(signature, request.body, endpoint.secret)).toBe(true);
      expect(verifyDocusealSignature(signature, `${request.body} `, endpoint.secret)).toBe(false);
      expect(verifyDocusealSignature(signature, request.body, 'whsec_wrong')).toBe(false);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it('submission.created carries GET /submissions/{id}', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        {
          role: 'Client',
          email: 'client@example.test',
          name: 'Chloé Client',
          phone: '+14155550100',
          external_id: 'cl-1',
          metadata: { crm: 42 },
        },
        { role: 'Manager', email: 'manager@example.test', name: 'Max Manager' },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    [client, manager] = created.json;
    const event = await waitForEvent('submission.created', client.submission_id);
    const get = await api('GET', `/submissions/${client.submission_id}`);
    expect(withoutTokens(event.json.data)).toEqual(withoutTokens(get.json));
    for (const key of openApiDataKeys('submissionWebhook')) expect(event.json.data, key).toHaveProperty(key);
  });

  /** What the form payload must hold for a submitter, from the REST API's answers. */
  async function expectFormPayload(
    data: Record<string, any>,
    submitterId: number,
    extra: { ip: string | null; ua: string | null; declineReason: string | null },
  ) {
    const submitter = (await api('GET', `/submitters/${submitterId}`)).json;
    const submission = (await api('GET', `/submissions/${submitter.submission_id}`)).json;
    const submissionUrl = `${t.config.appUrl}/e/${submission.slug}`;
    expect(withoutTokens(data)).toEqual(
      withoutTokens({
        id: submitter.id,
        submission_id: submitter.submission_id,
        email: submitter.email,
        phone: submitter.phone,
        name: submitter.name,
        ua: extra.ua,
        ip: extra.ip,
        sent_at: submitter.sent_at,
        opened_at: submitter.opened_at,
        completed_at: submitter.completed_at,
        declined_at: submitter.declined_at,
        created_at: submitter.created_at,
        updated_at: submitter.updated_at,
        external_id: submitter.external_id,
        metadata: submitter.metadata,
        status: submission.status,
        submitter_status: submitter.status,
        application_key: submitter.external_id,
        decline_reason: extra.declineReason,
        role: submitter.role,
        preferences: submitter.preferences,
        values: submitter.values,
        documents: submitter.documents,
        audit_log_url: submission.audit_log_url,
        submission_url: submissionUrl,
        template: {
          id: submission.template.id,
          name: submission.template.name,
          external_id: submission.template.external_id,
          created_at: submission.template.created_at,
          updated_at: submission.template.updated_at,
          folder_name: submission.template.folder_name,
        },
        submission: {
          id: submission.id,
          audit_log_url: submission.audit_log_url,
          combined_document_url: submission.combined_document_url,
          status: submission.status,
          url: submissionUrl,
          variables: submission.variables,
          created_at: submission.created_at,
        },
      }),
    );
    for (const key of SPEC_FORM_FIELDS) expect(data, key).toHaveProperty(key);
    for (const key of openApiDataKeys('formWebhook')) expect(data, key).toHaveProperty(key);
    // DocuSeal's webhook submitter has no slug, uuid or embed_src (a slug is a signing capability).
    for (const key of ['slug', 'uuid', 'embed_src']) expect(data).not.toHaveProperty(key);
  }

  it('form.viewed and form.started carry the submitter payload with the IP and user agent', async () => {
    await t.db.submitter.update({
      where: { id: client.id },
      data: { ip: '203.0.113.7', ua: 'Mozilla/5.0 (WebhookTest)', openedAt: new Date() },
    });
    await emit([{ type: 'form.viewed', accountId: alice.accountId, recordId: client.id }]);
    const viewed = await waitForEvent('form.viewed', client.id);
    expect(viewed.json.data).toMatchObject({
      id: client.id,
      status: 'pending',
      submitter_status: 'opened',
      ip: '203.0.113.7',
      ua: 'Mozilla/5.0 (WebhookTest)',
      email: 'client@example.test',
      role: 'Client',
    });
    expect(viewed.json.data.submission).toMatchObject({ id: client.submission_id, status: 'pending' });
    expect(viewed.json.data.metadata).toEqual({ crm: 42 });
    expect(viewed.json.data.external_id).toBe('cl-1');
    expect(viewed.json.data.submission_url).toMatch(new RegExp(`^${t.config.appUrl}/e/.+`));
    await expectFormPayload(viewed.json.data, client.id, {
      ip: '203.0.113.7',
      ua: 'Mozilla/5.0 (WebhookTest)',
      declineReason: null,
    });

    await emit([{ type: 'form.started', accountId: alice.accountId, recordId: client.id }]);
    const started = await waitForEvent('form.started', client.id);
    expect(started.json.event_type).toBe('form.started');
    await expectFormPayload(started.json.data, client.id, {
      ip: '203.0.113.7',
      ua: 'Mozilla/5.0 (WebhookTest)',
      declineReason: null,
    });
  });

  it('form.completed carries the values and the signed documents', async () => {
    const completed = await api('PUT', `/submitters/${client.id}`, {
      completed: true,
      values: { 'Client Name': 'Chloé Client' },
    });
    expect(completed.status, JSON.stringify(completed.json)).toBe(200);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const before = received('form.completed', client.id).length;
    await emit([{ type: 'form.completed', accountId: alice.accountId, recordId: client.id }]);
    const event = await waitForEvent('form.completed', client.id, before + 1);
    const data = event.json.data;
    // `status` is the submission's (spec), the party's own is `submitter_status`.
    expect(data.status).toBe('pending');
    expect(data.submitter_status).toBe('completed');
    expect(data.completed_at).toEqual(expect.stringMatching(/Z$/));
    expect(data.values).toEqual([{ field: 'Client Name', value: 'Chloé Client' }]);
    expect(data.documents).toEqual([{ name: 'agreement', url: expect.stringContaining('/file/') }]);
    // The manager has not signed: no audit log yet, the submission is pending.
    expect(data.audit_log_url).toBeNull();
    expect(data.submission.status).toBe('pending');
    await expectFormPayload(data, client.id, {
      ip: '203.0.113.7',
      ua: 'Mozilla/5.0 (WebhookTest)',
      declineReason: null,
    });
    // The document URL in the payload serves the PDF.
    const pdf = await fetch(data.documents[0].url);
    expect(pdf.status).toBe(200);
    expect(
      Buffer.from(await pdf.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
  });

  it('form.declined carries the decline reason', async () => {
    await t.db.submitter.update({
      where: { id: manager.id },
      data: { declinedAt: new Date(), declineReason: 'Wrong salary figure' },
    });
    await emit([{ type: 'form.declined', accountId: alice.accountId, recordId: manager.id }]);
    const event = await waitForEvent('form.declined', manager.id);
    expect(event.json.data).toMatchObject({
      id: manager.id,
      status: 'declined',
      submitter_status: 'declined',
      decline_reason: 'Wrong salary figure',
      declined_at: expect.stringMatching(/Z$/),
    });
    expect(event.json.data.submission.status).toBe('declined');
    // No IP recorded for this one: null, as DocuSeal before the signer acts.
    await expectFormPayload(event.json.data, manager.id, { ip: null, ua: null, declineReason: 'Wrong salary figure' });
  });

  it(
    'submission.completed and submission.expired carry GET /submissions/{id}; ' +
      'submission.archived and template.archived {id, archived_at}',
    async () => {
      const submissionId = client.submission_id;
      for (const type of ['submission.completed', 'submission.expired'] as const) {
        await emit([{ type, accountId: alice.accountId, recordId: submissionId }]);
        const event = await waitForEvent(type, submissionId);
        expect(withoutTokens(event.json.data)).toEqual(
          withoutTokens((await api('GET', `/submissions/${submissionId}`)).json),
        );
      }

      expect((await api('DELETE', `/submissions/${submissionId}`)).status).toBe(200);
      const archived = await waitForEvent('submission.archived', submissionId);
      const after = (await api('GET', `/submissions/${submissionId}`)).json;
      expect(archived.json.data).toEqual({ id: submissionId, archived_at: after.archived_at });
      expect(after.archived_at).toEqual(expect.stringMatching(/Z$/));

      expect((await api('DELETE', `/templates/${templateId}`)).status).toBe(200);
      const templateArchived = await waitForEvent('template.archived', templateId);
      const template = (await api('GET', `/templates/${templateId}`)).json;
      expect(templateArchived.json.data).toEqual({ id: templateId, archived_at: template.archived_at });
    },
  );

  it('records every delivery with its attempt, queryable per endpoint and per event', async () => {
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    const { body } = await gql(
      `query ($endpointId: Int, $eventType: String, $recordId: Int) {
        webhookDeliveries(endpointId: $endpointId, eventType: $eventType, recordId: $recordId, limit: 100) {
          id eventType recordType recordId status attemptCount nextAttemptAt payload
          endpoint { id }
          attempts { attempt statusCode durationMs error responseBody createdAt }
        }
      }`,
      { endpointId: endpoint.id, eventType: 'form.viewed', recordId: client.id },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data.webhookDeliveries).toEqual([
      {
        id: expect.any(Number),
        eventType: 'form.viewed',
        recordType: 'Submitter',
        recordId: client.id,
        status: 'succeeded',
        attemptCount: 1,
        nextAttemptAt: null,
        payload: expect.objectContaining({
          event_type: 'form.viewed',
          data: expect.objectContaining({ id: client.id }),
        }),
        endpoint: { id: endpoint.id },
        attempts: [
          {
            attempt: 0,
            statusCode: 200,
            durationMs: expect.any(Number),
            error: null,
            responseBody: 'ok',
            createdAt: expect.stringMatching(/Z$/),
          },
        ],
      },
    ]);
    // Every event raised so far reached the endpoint exactly once per raise, all succeeded.
    const all = await t.db.webhookDelivery.findMany({ where: { endpointId: endpoint.id } });
    expect(all.every((d) => d.status === 'succeeded')).toBe(true);
    expect(receiver.requests.filter((r) => r.path === '/hooks/alice')).toHaveLength(all.length);
  });

  it('lists deliveries with their attempts in a constant number of statements', async () => {
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    const query =
      'query ($limit: Int) { webhookDeliveries(limit: $limit) { ' +
      'id eventType attempts { attempt statusCode } endpoint { id url } } }';
    const counts: number[] = [];
    for (const limit of [1, 8]) {
      await t.resetQueries();
      const { body } = await gql(query, { limit });
      expect(body.data.webhookDeliveries).toHaveLength(limit);
      await t.settleQueries();
      counts.push(t.queries.length);
    }
    expect(counts[1]).toBe(counts[0]);
  });
});

describe('test event, redelivery and rotation', { timeout: 180_000 }, () => {
  it(
    'sendTestWebhook posts a signed form.completed of the latest completed submitter ' + 'and answers with the attempt',
    async () => {
      const latest = await t.db.submitter.findFirstOrThrow({
        where: { accountId: alice.accountId, completedAt: { not: null } },
        orderBy: { completedAt: 'desc' },
      });
      const before = receiver.requests.length;
      const { body } = await gql(
        'mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { ' +
          'delivery { eventType recordId status attempts { attempt statusCode error } } } }',
        { id: endpoint.id },
      );
      expect(body.errors).toBeUndefined();
      expect(body.data.sendTestWebhook.delivery).toEqual({
        eventType: 'form.completed',
        recordId: latest.id,
        status: 'succeeded',
        attempts: [{ attempt: 0, statusCode: 200, error: null }],
      });
      const request = receiver.requests[before]!;
      expect(request.json).toMatchObject({
        event_type: 'form.completed',
        data: { id: latest.id, submitter_status: 'completed' },
      });
      expect(signatureMatches(request.headers['x-docuseal-signature'], endpoint.secret, request.body)).toBe(true);

      // Bob has no submitter: nothing to show.
      const bobs = await gql(CREATE, { input: { url: `${receiver.url}/hooks/bob` } }, bob.apiKey);
      const bobEndpoint = bobs.body.data.createWebhookEndpoint.endpoint.id;
      const none = await gql(
        'mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { delivery { id } } }',
        { id: bobEndpoint },
        bob.apiKey,
      );
      expect(none.body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
      expect(none.body.errors?.[0]?.message).toMatch(/create a submission first/);
    },
  );

  it('redeliverWebhook sends the event again now as a new delivery with the same timestamp', async () => {
    const original = await t.db.webhookDelivery.findFirstOrThrow({
      where: { endpointId: endpoint.id, eventType: 'template.updated' },
      orderBy: { id: 'asc' },
    });
    const originalRequest = received('template.updated', templateId)[0]!;
    const { body } = await gql(
      'mutation ($id: Int!) { redeliverWebhook(input: {deliveryId: $id}) { ' +
        'delivery { id eventType recordId status } } }',
      { id: original.id },
    );
    expect(body.errors).toBeUndefined();
    const copy = body.data.redeliverWebhook.delivery;
    expect(copy).toMatchObject({ eventType: 'template.updated', recordId: templateId });
    expect(copy.id).not.toBe(original.id);
    const again = await waitForEvent('template.updated', templateId, 2);
    expect(again.json.timestamp).toBe(originalRequest.json.timestamp);
    // Rebuilt from the record as it is now: the template has been archived since.
    expect(again.json.data.archived_at).toEqual(expect.stringMatching(/Z$/));
    expect(originalRequest.json.data.archived_at).toBeNull();
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const stored = await t.db.webhookDelivery.findUniqueOrThrow({
      where: { id: copy.id },
      include: { attempts: true },
    });
    expect(stored.status).toBe('succeeded');
    expect(stored.attempts).toHaveLength(1);
    // The original is untouched.
    const originalAfter = await t.db.webhookDelivery.findUniqueOrThrow({
      where: { id: original.id },
      include: { attempts: true },
    });
    expect(originalAfter.attempts).toHaveLength(1);
  });

  it(
    'rotateWebhookSecret: for 24 hours each delivery is signed with the new and the old secret, ' +
      'then with the new only',
    async () => {
      const { body } = await gql(
        'mutation ($id: Int!) { rotateWebhookSecret(input: {id: $id}) { ' +
          'secret endpoint { id previousSecretExpiresAt } } }',
        { id: endpoint.id },
      );
      expect(body.errors).toBeUndefined();
      const rotated = body.data.rotateWebhookSecret;
      expect(rotated.secret).toMatch(/^whsec_/);
      expect(rotated.secret).not.toBe(endpoint.secret);
      const expiresIn = new Date(rotated.endpoint.previousSecretExpiresAt).getTime() - Date.now();
      expect(expiresIn).toBeGreaterThan(23.9 * 3600_000);
      expect(expiresIn).toBeLessThanOrEqual(24 * 3600_000);

      const recordId = (await t.db.submission.findFirstOrThrow({ where: { accountId: alice.accountId } })).id;
      const before = received('submission.completed', recordId).length;
      await emit([{ type: 'submission.completed', accountId: alice.accountId, recordId }]);
      const during = await waitForEvent('submission.completed', recordId, before + 1);
      const header = during.headers['x-docuseal-signature'] as string;
      expect(header.split(' ')).toHaveLength(2);
      expect(signatureMatches(header, rotated.secret, during.body)).toBe(true);
      expect(signatureMatches(header, endpoint.secret, during.body)).toBe(true);
      // Each part alone is a valid DocuSeal-format signature for one of the secrets.
      const [current, previous] = header.split(' ');
      expect(signatureMatches(current, rotated.secret, during.body)).toBe(true);
      expect(signatureMatches(previous, endpoint.secret, during.body)).toBe(true);

      // 24 hours later (moved back in the database): the old secret no longer signs.
      await t.db.webhookEndpoint.update({
        where: { id: endpoint.id },
        data: { previousSecretExpiresAt: new Date(Date.now() - 1000) },
      });
      await emit([{ type: 'submission.completed', accountId: alice.accountId, recordId }]);
      const after = await waitForEvent('submission.completed', recordId, before + 2);
      const single = after.headers['x-docuseal-signature'] as string;
      expect(single).toMatch(/^\d+\.[0-9a-f]{64}$/);
      expect(signatureMatches(single, rotated.secret, after.body)).toBe(true);
      expect(signatureMatches(single, endpoint.secret, after.body)).toBe(false);
      endpoint.secret = rotated.secret;
    },
  );
});

/** A payload builder on the test app's database and file URL signer, as the service builds its own. */
function payloadBuilder() {
  return createPayloadBuilder({ db: t.db, files: t.app.files.signer, appUrl: t.config.appUrl });
}

describe('dispatch', { timeout: 180_000 }, () => {
  it('is idempotent: running the same dispatch again creates and sends nothing more', async () => {
    const submission = await t.db.submission.findFirstOrThrow({ where: { accountId: alice.accountId } });
    const payloads = payloadBuilder();
    const deps = { db: t.db, jobs: t.jobs, payloads, logger: t.app.fastify.log };
    const event = {
      type: 'submission.expired' as EventType,
      accountId: alice.accountId,
      recordId: submission.id,
      at: new Date().toISOString(),
    };
    const before = received('submission.expired', submission.id).length;
    await dispatchEvent(deps, event, { id: 'test-dispatch-1' });
    await dispatchEvent(deps, event, { id: 'test-dispatch-1' });
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    await dispatchEvent(deps, event, { id: 'test-dispatch-1' });
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    expect(received('submission.expired', submission.id)).toHaveLength(before + 1);
    expect(
      await t.db.webhookDelivery.count({
        where: {
          eventType: 'submission.expired',
          recordId: submission.id,
          payload: { path: ['timestamp'], equals: event.at },
        },
      }),
    ).toBe(1);
    // Another dispatch (another event) is another delivery.
    await dispatchEvent(deps, event, { id: 'test-dispatch-2' });
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    expect(received('submission.expired', submission.id)).toHaveLength(before + 2);
    // Dispatches running at once share their statements (one turn of the event loop): the same
    // dispatch twice in one statement still makes one delivery, and two events two.
    await Promise.all([
      dispatchEvent(deps, event, { id: 'test-dispatch-3' }),
      dispatchEvent(deps, event, { id: 'test-dispatch-3' }),
      dispatchEvent(deps, event, { id: 'test-dispatch-4' }),
    ]);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    expect(received('submission.expired', submission.id)).toHaveLength(before + 4);
    expect(
      await t.db.webhookDelivery.count({
        where: {
          eventType: 'submission.expired',
          recordId: submission.id,
          payload: { path: ['timestamp'], equals: event.at },
        },
      }),
    ).toBe(4);
  });

  it('payloads asked for at once (read together) each carry their own record as the REST API answers it', async () => {
    const payloads = payloadBuilder();
    const pdf = await drawPdf([{ texts: [{ text: 'Second', x: 72, y: 72 }] }]);
    const second = await api('POST', '/templates/pdf', {
      name: 'Second',
      documents: [{ name: 'second', file: base64(pdf) }],
    });
    expect(second.status, JSON.stringify(second.json)).toBe(200);
    const submission = await t.db.submission.findFirstOrThrow({ where: { accountId: alice.accountId } });
    const at = new Date();
    const [first, other, ofSubmission, ofBob] = await Promise.all([
      payloads.build({ type: 'template.updated', accountId: alice.accountId, recordId: templateId, at }),
      payloads.build({ type: 'template.updated', accountId: alice.accountId, recordId: second.json.id, at }),
      payloads.build({ type: 'submission.completed', accountId: alice.accountId, recordId: submission.id, at }),
      // Another account's event: alice's template is not bob's record.
      payloads.build({ type: 'template.updated', accountId: bob.accountId, recordId: templateId, at }),
    ]);
    expect(withoutTokens(first!.data)).toEqual(withoutTokens((await api('GET', `/templates/${templateId}`)).json));
    expect(withoutTokens(other!.data)).toEqual(withoutTokens((await api('GET', `/templates/${second.json.id}`)).json));
    expect(withoutTokens(ofSubmission!.data)).toEqual(
      withoutTokens((await api('GET', `/submissions/${submission.id}`)).json),
    );
    expect(ofBob).toBeNull();
  });

  it('reads the payloads of one turn together: as many statements for three templates as for one', async () => {
    const payloads = payloadBuilder();
    const ids = (await t.db.template.findMany({ where: { accountId: alice.accountId }, select: { id: true } })).map(
      (row) => row.id,
    );
    expect(ids.length).toBeGreaterThanOrEqual(2);
    const statements = async (recordIds: number[]) => {
      await t.resetQueries();
      const built = await Promise.all(
        recordIds.map((recordId) =>
          payloads.build({ type: 'template.updated', accountId: alice.accountId, recordId, at: new Date() }),
        ),
      );
      expect(built.every((p) => p !== null)).toBe(true);
      await t.settleQueries();
      return t.queries.length;
    };
    const one = await statements([ids[0]!]);
    expect(await statements(ids)).toBe(one);
  });

  it('builds nothing for an archived account', async () => {
    const payloads = payloadBuilder();
    const request = { type: 'template.updated' as EventType, accountId: alice.accountId, recordId: templateId };
    expect(await payloads.build({ ...request, at: new Date() })).not.toBeNull();
    await t.db.account.update({ where: { id: alice.accountId }, data: { archivedAt: new Date() } });
    try {
      expect(await payloads.build({ ...request, at: new Date() })).toBeNull();
    } finally {
      await t.db.account.update({ where: { id: alice.accountId }, data: { archivedAt: null } });
    }
  });

  it('sends an account’s events to that account’s endpoints only', async () => {
    const bobEndpoint = await t.db.webhookEndpoint.findFirstOrThrow({ where: { accountId: bob.accountId } });
    await t.db.webhookEndpoint.update({ where: { id: bobEndpoint.id }, data: { events: [...EVENT_TYPES] } });
    const submission = await t.db.submission.findFirstOrThrow({ where: { accountId: alice.accountId } });
    await emit([{ type: 'submission.completed', accountId: alice.accountId, recordId: submission.id }]);
    // An event naming a record of another account sends nothing (the record is not the account's).
    await emit([{ type: 'submission.completed', accountId: bob.accountId, recordId: submission.id }]);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    expect(receiver.requests.filter((r) => r.path === '/hooks/bob')).toHaveLength(0);
    expect(await t.db.webhookDelivery.count({ where: { accountId: bob.accountId } })).toBe(0);
  });
});

describe('cross-account', { timeout: 180_000 }, () => {
  it("another account's endpoints and deliveries are FORBIDDEN; unknown ones NOT_FOUND", async () => {
    const delivery = await t.db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
    const calls: [string, Record<string, unknown>][] = [
      ['query ($id: Int!) { webhookEndpoint(id: $id) { id } }', { id: endpoint.id }],
      ['query ($id: Int!) { webhookDeliveries(endpointId: $id) { id } }', { id: endpoint.id }],
      ['query ($id: Int!) { webhookDelivery(id: $id) { id } }', { id: delivery.id }],
      [
        'mutation ($id: Int!) { updateWebhookEndpoint(input: {id: $id, url: "https://evil.example"}) ' +
          '{ endpoint { id } } }',
        { id: endpoint.id },
      ],
      ['mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }', { id: endpoint.id }],
      ['mutation ($id: Int!) { rotateWebhookSecret(input: {id: $id}) { secret } }', { id: endpoint.id }],
      ['mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { delivery { id } } }', { id: endpoint.id }],
      ['mutation ($id: Int!) { redeliverWebhook(input: {deliveryId: $id}) { delivery { id } } }', { id: delivery.id }],
    ];
    const requestsBefore = receiver.requests.length;
    for (const [query, variables] of calls) {
      const forbidden = await gql(query, variables, bob.apiKey);
      expect(forbidden.body.errors?.[0]?.extensions?.code, query).toBe('FORBIDDEN');
      const unknown = await gql(query, Object.fromEntries(Object.keys(variables).map((k) => [k, 987_654])), bob.apiKey);
      expect(unknown.body.errors?.[0]?.extensions?.code, query).toBe('NOT_FOUND');
    }
    const lists = await gql('{ webhookEndpoints { id } webhookDeliveries(limit: 100) { id } }', {}, bob.apiKey);
    expect(lists.body.data.webhookEndpoints.map((e: { id: number }) => e.id)).not.toContain(endpoint.id);
    expect(lists.body.data.webhookDeliveries).toEqual([]);
    const stored = await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
    expect(stored.url).toBe(`${receiver.url}/hooks/alice`);
    expect(stored.secret).toBe(endpoint.secret);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    expect(receiver.requests.length).toBe(requestsBefore);
    // Without a key: UNAUTHENTICATED.
    const anonymous = await graphql(t.url, '{ webhookEndpoints { id } }');
    expect(anonymous.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
