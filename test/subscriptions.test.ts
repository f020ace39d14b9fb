/**
 * GraphQL subscriptions on one instance, in process (no REDIS_URL): `formEvents` and
 * `submissionUpdated` over graphql-ws (real WebSocket, API key in connectionParams) and SSE
 * (through the Fastify route), their filters, authentication, and account isolation.
 *
 * "Nothing else arrived" is shown without waiting: events are published in emit order, so when a
 * subscriber's first result is the event emitted last, the ones emitted before it were not sent
 * to it. The tests wait for subscriptions to be listening (LiveEvents.subscriberCount), which the
 * protocols do not acknowledge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'graphql-ws';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import type { EventType, SideEffects } from '../src/events/events.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { subscribeSse, subscribeWs, until, wsClient, type Feed } from './helpers/subscriptions.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
/** The service's own side effects (what ctx.effects is): dispatch-event jobs and live events. */
let sink: SideEffects;
const clients: Client[] = [];

interface Party {
  id: number;
  submission_id: number;
  email: string;
}
/** Alice's templates T1, T2; submissions S1, S2 of T1 and S3 of T2 (two parties each); Bob's S4. */
let T1: number;
let T2: number;
let S1: Party[];
let S2: Party[];
let S3: Party[];
let S4: Party[];

const FORM_EVENTS = /* GraphQL */ `
  subscription FormEvents($templateId: Int, $submissionId: Int) {
    formEvents(templateId: $templateId, submissionId: $submissionId) {
      eventType
      timestamp
      submitter { id email status submissionId }
      submission { id status template { id } }
    }
  }
`;
const SUBMISSION_UPDATED = /* GraphQL */ `
  subscription SubmissionUpdated($id: Int!) {
    submissionUpdated(id: $id) {
      eventType timestamp submitter { id } submission { id archivedAt status submitters { id completedAt } }
    }
  }
`;

async function createTemplate(account: CreatedAccount, name: string): Promise<number> {
  const { status, json } = await rest(t.url, account.apiKey, 'POST', '/templates/pdf', {
    name,
    documents: [{ name: 'contract', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Client Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 200, w: 200, h: 24, page: 1 }] },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json.id;
}

async function createSubmission(account: CreatedAccount, templateId: number, tag: string): Promise<Party[]> {
  const { status, json } = await rest(t.url, account.apiKey, 'POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [
      { role: 'Client', email: `client-${tag}@example.test` },
      { role: 'Manager', email: `manager-${tag}@example.test` },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

const emit = (account: CreatedAccount, type: EventType, recordId: number) =>
  sink.emit([{ type, accountId: account.accountId, recordId, at: new Date() }]);

/** A graphql-ws client with this API key (none: unauthenticated), closed after the file. */
function client(apiKey?: string): Client {
  const c = wsClient(t.url, apiKey);
  clients.push(c);
  return c;
}

/** Waits until `count` subscriptions of the account listen on the server. */
const listening = (account: CreatedAccount, count: number) =>
  until(
    () => t.app.live.subscriberCount(account.accountId) === count,
    15_000,
    `${count} subscription(s) of account ${account.accountId}`,
  );

async function closeAll(...feeds: Feed[]) {
  for (const feed of feeds) feed.close();
}

beforeAll(async () => {
  t = await startTestApp();
  sink = t.app.effects;
  alice = await t.createAccount({ name: 'Alice Ltd', email: 'alice@subscriptions.test' });
  bob = await t.createAccount({ name: 'Bob GmbH', email: 'bob@subscriptions.test' });
  T1 = await createTemplate(alice, 'Lease');
  T2 = await createTemplate(alice, 'NDA');
  S1 = await createSubmission(alice, T1, 's1');
  S2 = await createSubmission(alice, T1, 's2');
  S3 = await createSubmission(alice, T2, 's3');
  S4 = await createSubmission(bob, await createTemplate(bob, 'Bob form'), 's4');
});

afterAll(async () => {
  for (const c of clients) await c.dispose();
  await t?.close();
});

describe('in process (no REDIS_URL)', () => {
  it('uses the in-process transport', () => {
    expect(t.config.redisUrl).toBeUndefined();
    expect(t.app.live.transport).toBe('memory');
  });
});

describe('formEvents over graphql-ws', () => {
  it('delivers a form event with its timestamp, submitter and submission as they are now', async () => {
    const feed = subscribeWs(client(alice.apiKey), FORM_EVENTS);
    await listening(alice, 1);
    const at = new Date('2026-11-21T10:00:00.123Z');
    await sink.emit([{ type: 'form.viewed', accountId: alice.accountId, recordId: S1[0]!.id, at }]);
    const data = await feed.nextData();
    expect(data.formEvents).toEqual({
      eventType: 'form.viewed',
      timestamp: '2026-11-21T10:00:00.123Z',
      submitter: {
        id: S1[0]!.id,
        email: 'client-s1@example.test',
        status: expect.any(String),
        submissionId: S1[0]!.submission_id,
      },
      submission: { id: S1[0]!.submission_id, status: 'pending', template: { id: T1 } },
    });
    feed.close();
    await listening(alice, 0);
  });

  it('sends every form.* type and no other event', async () => {
    const feed = subscribeWs(client(alice.apiKey), FORM_EVENTS);
    await listening(alice, 1);
    const submitter = S2[1]!.id;
    await emit(alice, 'submission.created', S2[1]!.submission_id);
    await emit(alice, 'template.updated', T1);
    for (const type of ['form.viewed', 'form.started', 'form.completed', 'form.declined'] as const)
      await emit(alice, type, submitter);
    const types = [];
    for (let i = 0; i < 4; i += 1) types.push((await feed.nextData()).formEvents.eventType);
    expect(types).toEqual(['form.viewed', 'form.started', 'form.completed', 'form.declined']);
    feed.close();
    await listening(alice, 0);
  });

  it('filters by submissionId and by templateId', async () => {
    const c = client(alice.apiKey);
    const bySubmission = subscribeWs(c, FORM_EVENTS, { submissionId: S2[0]!.submission_id });
    const byTemplate = subscribeWs(c, FORM_EVENTS, { templateId: T2 });
    const both = subscribeWs(c, FORM_EVENTS, { templateId: T1, submissionId: S1[0]!.submission_id });
    await listening(alice, 3);
    await emit(alice, 'form.started', S1[0]!.id); // T1/S1: only `both`
    await emit(alice, 'form.started', S2[0]!.id); // T1/S2: only `bySubmission`
    await emit(alice, 'form.started', S3[1]!.id); // T2/S3: only `byTemplate`
    expect((await bySubmission.nextData()).formEvents.submitter.id).toBe(S2[0]!.id);
    expect((await byTemplate.nextData()).formEvents.submitter.id).toBe(S3[1]!.id);
    expect((await both.nextData()).formEvents.submitter.id).toBe(S1[0]!.id);
    // Nothing else reached them: the next event each of them accepts comes next, not an earlier one.
    await emit(alice, 'form.completed', S2[1]!.id);
    await emit(alice, 'form.completed', S3[0]!.id);
    await emit(alice, 'form.completed', S1[1]!.id);
    expect((await bySubmission.nextData()).formEvents).toMatchObject({
      eventType: 'form.completed',
      submitter: { id: S2[1]!.id },
    });
    expect((await byTemplate.nextData()).formEvents).toMatchObject({
      eventType: 'form.completed',
      submitter: { id: S3[0]!.id },
    });
    expect((await both.nextData()).formEvents).toMatchObject({
      eventType: 'form.completed',
      submitter: { id: S1[1]!.id },
    });
    expect([bySubmission.count, byTemplate.count, both.count]).toEqual([2, 2, 2]);
    await closeAll(bySubmission, byTemplate, both);
    await listening(alice, 0);
  });
  it(
    'gives identical subscriptions (one shared execution ' + 'per event) and other selections each their own result',
    async () => {
      const c = client(alice.apiKey);
      const SMALL = 'subscription ($id: Int) { formEvents(submissionId: $id) { eventType submitter { id } } }';
      const first = subscribeWs(c, SMALL, { id: S3[0]!.submission_id });
      const second = subscribeWs(client(alice.apiKey), SMALL, { id: S3[0]!.submission_id });
      const overSse = (await subscribeSse(t.url, alice.apiKey, SMALL, { id: S3[0]!.submission_id })).feed;
      const full = subscribeWs(c, FORM_EVENTS, { submissionId: S3[0]!.submission_id });
      await listening(alice, 4);
      await emit(alice, 'form.started', S3[0]!.id);
      const small = { formEvents: { eventType: 'form.started', submitter: { id: S3[0]!.id } } };
      expect(await first.nextData()).toEqual(small);
      expect(await second.nextData()).toEqual(small);
      expect(await overSse.nextData()).toEqual(small);
      expect((await full.nextData()).formEvents).toMatchObject({
        eventType: 'form.started',
        submitter: { email: 'client-s3@example.test' },
        submission: { id: S3[0]!.submission_id },
      });
      await closeAll(first, second, overSse, full);
      await listening(alice, 0);
    },
  );
});

describe('submissionUpdated', () => {
  it(
    'over graphql-ws: the submission after each event about it or its submitters, ' + 'raised by the real routes',
    async () => {
      const submissionId = S3[0]!.submission_id;
      const feed = subscribeWs(client(alice.apiKey), SUBMISSION_UPDATED, { id: submissionId });
      await listening(alice, 1);
      // Another submission's event first: it must not arrive.
      expect((await rest(t.url, alice.apiKey, 'DELETE', `/submissions/${S2[0]!.submission_id}`)).status).toBe(200);
      const archived = await rest(t.url, alice.apiKey, 'DELETE', `/submissions/${submissionId}`);
      expect(archived.status).toBe(200);
      const first = (await feed.nextData()).submissionUpdated;
      expect(first).toMatchObject({
        eventType: 'submission.archived',
        timestamp: archived.json.archived_at,
        submitter: null,
        submission: { id: submissionId, archivedAt: archived.json.archived_at },
      });
      // A submitter event (emitted the way services do) names its
      // submitter and brings the submission again, as it is now.
      await emit(alice, 'form.viewed', S3[1]!.id);
      expect((await feed.nextData()).submissionUpdated).toMatchObject({
        eventType: 'form.viewed',
        submitter: { id: S3[1]!.id },
        submission: { id: submissionId },
      });
      // Restored with PUT, then archived again with PUT archived:true: one event (the change).
      expect((await rest(t.url, alice.apiKey, 'PUT', `/submissions/${submissionId}`, { archived: false })).status).toBe(
        200,
      );
      expect((await rest(t.url, alice.apiKey, 'PUT', `/submissions/${submissionId}`, { archived: true })).status).toBe(
        200,
      );
      const again = (await feed.nextData()).submissionUpdated;
      expect(again.eventType).toBe('submission.archived');
      expect(again.submission.archivedAt).not.toBeNull();
      expect(again.submission.archivedAt).not.toBe(first.submission.archivedAt);
      expect(feed.count).toBe(3);
      feed.close();
      await listening(alice, 0);
    },
  );

  it('over graphql-ws: completing a party with PUT /submitters completed:true brings its form.completed', async () => {
    const [client1] = S1;
    const feed = subscribeWs(client(alice.apiKey), SUBMISSION_UPDATED, { id: client1!.submission_id });
    await listening(alice, 1);
    const put = await rest(t.url, alice.apiKey, 'PUT', `/submitters/${client1!.id}`, {
      completed: true,
      values: { 'Client Name': 'Ada' },
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    // The completion job emits form.completed once the party's documents are made.
    const update = (await feed.nextData(60_000)).submissionUpdated;
    expect(update).toMatchObject({
      eventType: 'form.completed',
      submitter: { id: client1!.id },
      submission: { id: client1!.submission_id, status: 'pending' },
    });
    expect(update.submission.submitters.find((s: { id: number }) => s.id === client1!.id).completedAt).not.toBeNull();
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    feed.close();
    await listening(alice, 0);
  });

  it(
    'one message per event, saying which event and which submitter: two completions and an archive, ' +
      'in order, no duplicates',
    async () => {
      const [first, second] = await createSubmission(alice, T2, 'sequence');
      const submissionId = first!.submission_id;
      const SEQUENCE =
        'subscription ($id: Int!) { ' +
        'submissionUpdated(id: $id) { eventType submitter { id } submission { id status } } }';
      const feed = subscribeWs(client(alice.apiKey), SEQUENCE, { id: submissionId });
      await listening(alice, 1);
      for (const party of [first!, second!]) {
        const put = await rest(t.url, alice.apiKey, 'PUT', `/submitters/${party.id}`, { completed: true });
        expect(put.status, JSON.stringify(put.json)).toBe(200);
        // The completion job raises form.completed (and, after the last party, submission.completed).
        await t.jobs.waitForIdle({ timeoutMs: 60_000 });
      }
      expect((await rest(t.url, alice.apiKey, 'DELETE', `/submissions/${submissionId}`)).status).toBe(200);
      // Events are published in order: everything before the archive has arrived once it has.
      const messages = [];
      for (;;) {
        const message = (await feed.nextData(60_000)).submissionUpdated;
        messages.push(message);
        if (message.eventType === 'submission.archived') break;
      }
      const submission = (status: string) => ({ id: submissionId, status });
      expect(messages).toEqual([
        { eventType: 'form.completed', submitter: { id: first!.id }, submission: submission('pending') },
        { eventType: 'form.completed', submitter: { id: second!.id }, submission: submission('completed') },
        { eventType: 'submission.completed', submitter: null, submission: submission('completed') },
        { eventType: 'submission.archived', submitter: null, submission: submission('completed') },
      ]);
      expect(new Set(messages.map((m) => JSON.stringify(m))).size).toBe(messages.length);
      feed.close();
      await listening(alice, 0);
    },
  );

  it(
    'over SSE through the Fastify route: an event stream, results as they happen, ' +
      'cleaned up when the client leaves',
    async () => {
      const submissionId = S4[0]!.submission_id;
      const { feed, status, contentType } = await subscribeSse(t.url, bob.apiKey, SUBMISSION_UPDATED, {
        id: submissionId,
      });
      expect(status).toBe(200);
      expect(contentType).toContain('text/event-stream');
      await listening(bob, 1);
      const archived = await rest(t.url, bob.apiKey, 'DELETE', `/submissions/${submissionId}`);
      expect(archived.status).toBe(200);
      expect((await feed.nextData()).submissionUpdated).toMatchObject({
        eventType: 'submission.archived',
        submitter: null,
        submission: { id: submissionId, archivedAt: archived.json.archived_at },
      });
      // DELETE again: submission.archived every time (reference §7.8).
      const second = await rest(t.url, bob.apiKey, 'DELETE', `/submissions/${submissionId}`);
      expect((await feed.nextData()).submissionUpdated).toMatchObject({
        eventType: 'submission.archived',
        submission: { id: submissionId, archivedAt: second.json.archived_at },
      });
      feed.close();
      await listening(bob, 0);
    },
  );

  it('over SSE: formEvents too', async () => {
    const { feed } = await subscribeSse(t.url, alice.apiKey, FORM_EVENTS, { templateId: T2 });
    await listening(alice, 1);
    await emit(alice, 'form.declined', S3[1]!.id);
    expect((await feed.nextData()).formEvents).toMatchObject({
      eventType: 'form.declined',
      submitter: { id: S3[1]!.id },
      submission: { id: S3[1]!.submission_id },
    });
    feed.close();
    await listening(alice, 0);
  });
});

describe('authentication and accounts', () => {
  it('refuses a subscription without a valid key (graphql-ws and SSE)', async () => {
    for (const key of [undefined, 'sgt_not-a-real-key-000000000000000000000000']) {
      const ws = subscribeWs(client(key), FORM_EVENTS);
      const wsResult = await ws.next().catch((error: unknown) => ({ errors: error as never }));
      expect(JSON.stringify(wsResult)).toContain('UNAUTHENTICATED');
      const sse = await subscribeSse(t.url, key, FORM_EVENTS);
      const sseResult = await sse.feed.next();
      expect(sseResult.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      sse.feed.close();
    }
    expect(t.app.live.subscriberCount()).toBe(0);
  });

  it("refuses another account's submission or template (FORBIDDEN) and an unknown one (NOT_FOUND)", async () => {
    const c = client(bob.apiKey);
    const cases: [string, Record<string, unknown>, string][] = [
      [SUBMISSION_UPDATED, { id: S1[0]!.submission_id }, 'FORBIDDEN'],
      [FORM_EVENTS, { submissionId: S1[0]!.submission_id }, 'FORBIDDEN'],
      [FORM_EVENTS, { templateId: T1 }, 'FORBIDDEN'],
      [SUBMISSION_UPDATED, { id: 999_999 }, 'NOT_FOUND'],
    ];
    for (const [query, variables, code] of cases) {
      const feed = subscribeWs(c, query, variables);
      const result = await feed.next().catch((error: unknown) => ({ errors: error as never }));
      expect(JSON.stringify(result), JSON.stringify(variables)).toContain(code);
    }
    expect(t.app.live.subscriberCount(bob.accountId)).toBe(0);
  });

  it("never gives a subscriber another account's events", async () => {
    const bobFeed = subscribeWs(client(bob.apiKey), FORM_EVENTS);
    const bobSse = (await subscribeSse(t.url, bob.apiKey, FORM_EVENTS)).feed;
    const aliceFeed = subscribeWs(client(alice.apiKey), FORM_EVENTS);
    await listening(bob, 2);
    await listening(alice, 1);
    // Alice's events, one of them claiming Bob's account for Alice's submitter (a faulty emitter): none reaches Bob.
    await emit(alice, 'form.viewed', S1[1]!.id);
    await emit(alice, 'form.completed', S2[0]!.id);
    await sink.emit([{ type: 'form.viewed', accountId: bob.accountId, recordId: S1[0]!.id, at: new Date() }]);
    await emit(alice, 'submission.archived', S1[0]!.submission_id);
    // Bob's own event, last.
    await emit(bob, 'form.started', S4[1]!.id);
    for (const feed of [bobFeed, bobSse]) {
      const first = (await feed.nextData()).formEvents;
      expect(first).toMatchObject({
        eventType: 'form.started',
        submitter: { id: S4[1]!.id },
        submission: { id: S4[1]!.submission_id },
      });
      expect(feed.count).toBe(1);
    }
    // Alice got hers (and not the forged one).
    expect((await aliceFeed.nextData()).formEvents.submitter.id).toBe(S1[1]!.id);
    expect((await aliceFeed.nextData()).formEvents.submitter.id).toBe(S2[0]!.id);
    await emit(alice, 'form.declined', S3[0]!.id);
    expect((await aliceFeed.nextData()).formEvents).toMatchObject({
      eventType: 'form.declined',
      submitter: { id: S3[0]!.id },
    });
    await closeAll(bobFeed, bobSse, aliceFeed);
    await listening(bob, 0);
    await listening(alice, 0);
  });
});
