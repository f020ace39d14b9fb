/**
 * DocuSeal's polling feeds, GET /events/form/:type and GET /events/submission/:type, and the
 * GraphQL eventFeed: each item the webhook of its event, newest first, DocuSeal's after/before
 * (UNIX seconds) and pagination, one feed per event type.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;
/** Submission ids, oldest first, each with one party. */
const submissions: number[] = [];
const parties: number[] = [];
const api = (method: string, p: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, p, body);
const BASE = Date.UTC(2026, 10, 1, 12, 0, 0);
const second = (n: number) => new Date(BASE + n * 1000);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@feed.test' });
  bob = await t.createAccount({ email: 'bob@feed.test' });
  const template = await api('POST', '/templates/pdf', {
    name: 'Feed',
    documents: [{ name: 'doc', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', required: false, areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] }],
  });
  templateId = template.json.id;
  for (let i = 0; i < 5; i += 1) {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: `c${i}@feed.test`, completed: i < 4 }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    submissions.push(created.json[0].submission_id);
    parties.push(created.json[0].id);
  }
  await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
  // Completions at known seconds: 0, 10, 10 (two in one second), 20; the fifth pending.
  const at = [0, 10, 10, 20];
  for (const [i, s] of at.entries()) {
    await t.db.submitter.update({ where: { id: parties[i]! }, data: { completedAt: second(s) } });
    await t.db.submission.update({ where: { id: submissions[i]! }, data: { completedAt: second(s) } });
  }
  // The last completed one archived: left out of submission.completed, listed in submission.archived.
  expect((await api('DELETE', `/submissions/${submissions[3]}`)).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe('GET /events/form/:type', () => {
  it('lists completions newest first as the form.completed webhook carries them', async () => {
    const { status, json } = await api('GET', '/events/form/completed');
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.data.map((e: { data: { id: number } }) => e.data.id)).toEqual([
      parties[3],
      parties[2],
      parties[1],
      parties[0],
    ]);
    const [first] = json.data;
    expect(first.event_type).toBe('form.completed');
    expect(first.timestamp).toBe(second(20).toISOString());
    expect(first.data).toMatchObject({ id: parties[3], submission_id: submissions[3], submitter_status: 'completed' });
    expect(Object.keys(first.data)).toContain('submission_url');
    expect(json.pagination).toEqual({ count: 4, next: BASE / 1000, prev: BASE / 1000 + 20 });
    // The prefix may be given; other accounts see none of it.
    expect((await api('GET', '/events/form/form.completed')).json.data).toHaveLength(4);
    expect((await api('GET', '/events/form/completed', undefined, bob.apiKey)).json.data).toEqual([]);
  });

  it('pages by UNIX seconds as DocuSeal: after = older than, before = from the next second on', async () => {
    const firstPage = (await api('GET', '/events/form/completed?limit=1')).json;
    expect(firstPage.data.map((e: { data: { id: number } }) => e.data.id)).toEqual([parties[3]]);
    const older = (await api('GET', `/events/form/completed?after=${firstPage.pagination.next}`)).json;
    expect(older.data.map((e: { data: { id: number } }) => e.data.id)).toEqual([parties[2], parties[1], parties[0]]);
    const newer = (await api('GET', `/events/form/completed?before=${BASE / 1000 + 9}`)).json;
    expect(newer.data.map((e: { data: { id: number } }) => e.data.id)).toEqual([parties[3], parties[2], parties[1]]);
    const none = (await api('GET', `/events/form/completed?after=${BASE / 1000}`)).json;
    expect(none).toEqual({ data: [], pagination: { count: 0, next: null, prev: null } });
    expect((await api('GET', '/events/form/completed?limit=1000')).json.data).toHaveLength(4);
  });

  it('lists each event type by its own time, and refuses one it does not list', async () => {
    const declined = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'decliner@feed.test' }],
    });
    await t.db.submitter.update({ where: { id: declined.json[0].id }, data: { declinedAt: second(30) } });
    const feed = (await api('GET', '/events/form/declined')).json;
    expect(feed.data.map((e: { event_type: string; data: { id: number } }) => [e.event_type, e.data.id])).toEqual([
      ['form.declined', declined.json[0].id],
    ]);
    const refused = await api('GET', '/events/form/signed');
    expect(refused.status).toBe(422);
    expect(refused.json.error).toBe('type must be one of viewed, started, completed, declined');
    expect((await api('GET', '/events/form/completed?after=soon')).status).toBe(422);
  });
});

describe('GET /events/submission/:type', () => {
  it('lists completed, non-archived submissions with the GET /submissions/{id} data', async () => {
    const { json } = await api('GET', '/events/submission/completed');
    expect(json.data.map((e: { data: { id: number } }) => e.data.id)).toEqual([
      submissions[2],
      submissions[1],
      submissions[0],
    ]);
    const item = json.data[0];
    expect(item.event_type).toBe('submission.completed');
    const read = (await api('GET', `/submissions/${submissions[2]}`)).json;
    // The same record as GET answers it (document URLs are signed per request: compared without them).
    const withoutUrls = (x: unknown) => JSON.parse(JSON.stringify(x).replace(/"https?:[^"]*"/g, '"url"'));
    expect(withoutUrls(item.data)).toEqual(withoutUrls(read));
  });

  it('submission.archived carries {id, archived_at}; submission.created every one', async () => {
    const archived = (await api('GET', '/events/submission/archived')).json;
    expect(archived.data.map((e: { data: unknown }) => e.data)).toEqual([
      { id: submissions[3], archived_at: expect.any(String) },
    ]);
    const createdAnswer = await api('GET', '/events/submission/created?limit=100');
    expect(createdAnswer.status, JSON.stringify(t.logs.filter((l) => l.level === 50).slice(-1))).toBe(200);
    const created = createdAnswer.json;
    expect(created.data.map((e: { data: { id: number } }) => e.data.id).slice(-5)).toEqual([...submissions].reverse());
  });

  it('submission.expired: a pending submission whose expire_at passed, by that time', async () => {
    expect((await api('GET', '/events/submission/expired')).json.data).toEqual([]);
    await t.db.submission.update({ where: { id: submissions[4]! }, data: { expireAt: second(40) } });
    const { json } = await api('GET', '/events/submission/expired');
    expect(
      json.data.map((e: { event_type: string; timestamp: string; data: { id: number; status: string } }) => [
        e.event_type,
        e.timestamp,
        e.data.id,
        e.data.status,
      ]),
    ).toEqual([['submission.expired', second(40).toISOString(), submissions[4], 'expired']]);
  });

  it('is the GraphQL eventFeed', async () => {
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': alice.apiKey },
      body: JSON.stringify({
        query: `{ eventFeed(kind: submission, type: "completed", limit: 2) {
          data { eventType timestamp data } pagination { count next prev } } }`,
      }),
    });
    const body = await response.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.eventFeed.pagination).toEqual({ count: 2, next: BASE / 1000 + 10, prev: BASE / 1000 + 10 });
    expect(body.data.eventFeed.data[0]).toMatchObject({
      eventType: 'submission.completed',
      data: { id: submissions[2] },
    });
  });
});
