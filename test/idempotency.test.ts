/**
 * Idempotency keys (issue 16; docs/idempotency.md) on a real server, real PostgreSQL and real SMTP:
 * concurrent duplicates of POST /api/submissions and of the createSubmissions mutation make one
 * submission and one email; a replay has the first answer's status and body and
 * `Idempotent-Replayed: true`; another request with the key → 422, one still running → 409; keys
 * are per account; they expire after 24 h (the service's clock seam, moved by the test) and the
 * sweep deletes them; answers refused before execution are not kept, those after are; a lock
 * whose holder stopped renewing it passes; GETs, queries and callers without an API key ignore
 * the header; graphql-ws refuses it; createApiKey refuses it.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { createIdempotencyKeys, requestFingerprint } from '../src/accounts/idempotency-keys.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { freePort, startService, testServiceEnv } from './helpers/processes.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { wsClient } from './helpers/subscriptions.ts';
import { createApiKey } from '../src/accounts/api-keys.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let alice: CreatedAccount;
let bob: CreatedAccount;
let aliceTemplate: number;
let bobTemplate: number;
/** The service's clock (buildApp's `clock`) runs this far ahead of the system's. */
let clockAheadMs = 0;
let keySequence = 0;
/** A new key per call: tests do not share keys unless they mean to. */
const newKey = () => `key-${Date.now()}-${(keySequence += 1)}`;

const ONE_DAY_MS = 24 * 60 * 60 * 1000;

interface Answer {
  status: number;
  replayed: string | null;
  contentType: string | null;
  text: string;
  json: any;
}

async function send(
  method: string,
  path: string,
  options: { apiKey?: string; key?: string; body?: unknown; rawBody?: string } = {},
): Promise<Answer> {
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(options.apiKey ? { 'x-auth-token': options.apiKey } : {}),
      ...(options.key !== undefined ? { 'idempotency-key': options.key } : {}),
    },
    body: options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  const text = await response.text();
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    contentType: response.headers.get('content-type'),
    text,
    json: text ? JSON.parse(text) : undefined,
  };
}

const gql = (apiKey: string | undefined, key: string | undefined, query: string, variables?: unknown) =>
  send('POST', '/graphql', { apiKey, key, body: { query, variables } });

const submissionBody = (templateId: number, email: string) => ({
  template_id: templateId,
  submitters: [{ role: 'Signer', email }],
});

const submissionsTo = (email: string) => t.db.submitter.count({ where: { email } });
const mailsTo = (email: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(email));

async function createTemplate(account: CreatedAccount): Promise<number> {
  const created = await send('POST', '/api/templates/pdf', {
    apiKey: account.apiKey,
    body: {
      name: 'Idempotent NDA',
      documents: [{ name: 'nda', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [
        { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
      ],
    },
  });
  expect(created.status).toBe(200);
  return created.json.id;
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({
    env: { SMTP_URL: smtp.url, DOWNLOAD_ALLOW_PRIVATE: 'true' },
    clock: { now: () => new Date(Date.now() + clockAheadMs) },
  });
  alice = await t.createAccount({ email: 'alice@idempotency.test' });
  bob = await t.createAccount({ email: 'bob@idempotency.test' });
  aliceTemplate = await createTemplate(alice);
  bobTemplate = await createTemplate(bob);
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

describe('REST: POST /api/submissions with an Idempotency-Key', () => {
  it('costs no statement without the header, nor on a GET with it; two with it (claim, answer)', async () => {
    const statements = async (request: () => Promise<Answer>) => {
      await t.resetQueries();
      expect((await request()).status).toBe(200);
      await t.settleQueries();
      return t.queries.filter((sql) => /idempotency_keys/.test(sql)).length;
    };
    const body = submissionBody(aliceTemplate, 'statements@example.test');
    expect(await statements(() => send('POST', '/api/submissions', { apiKey: alice.apiKey, body }))).toBe(0);
    expect(await statements(() => send('GET', '/api/user', { apiKey: alice.apiKey, key: newKey() }))).toBe(0);
    expect(
      await statements(() => send('POST', '/api/submissions', { apiKey: alice.apiKey, key: newKey(), body })),
    ).toBe(2);
    const query = () => gql(alice.apiKey, undefined, CREATE, createInput(aliceTemplate, 'statements@example.test'));
    expect(await statements(query)).toBe(0);
  });

  it('concurrent duplicates make one submission and send one email; the others are 409 or replays', async () => {
    const key = newKey();
    const body = submissionBody(aliceTemplate, 'concurrent@example.test');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body })),
    );
    const ran = answers.filter((a) => a.status === 200 && a.replayed === null);
    const replays = answers.filter((a) => a.replayed === 'true');
    const inUse = answers.filter((a) => a.status === 409);
    expect(ran).toHaveLength(1);
    expect(replays.length + inUse.length).toBe(9);
    for (const replay of replays) {
      expect(replay.status).toBe(200);
      expect(replay.text).toBe(ran[0]!.text);
    }
    for (const refused of inUse) expect(refused.json.error).toMatch(/Idempotency-Key is still in progress/);

    await t.jobs.waitForIdle();
    expect(await submissionsTo('concurrent@example.test')).toBe(1);
    expect(mailsTo('concurrent@example.test')).toHaveLength(1);
  });

  it('replays the first answer (status, body, content type) with Idempotent-Replayed: true', async () => {
    const key = newKey();
    const body = submissionBody(aliceTemplate, 'replay@example.test');
    const first = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    // The same body with other key order and spacing, and the `.json` path, is the same request.
    const again = await send('POST', '/api/submissions.json', {
      apiKey: alice.apiKey,
      key,
      rawBody: `{ "submitters": [{"email": "replay@example.test", "role": "Signer"}],
                  "template_id": ${aliceTemplate} }`,
    });
    expect(again.status).toBe(200);
    expect(again.replayed).toBe('true');
    expect(again.contentType).toBe(first.contentType);
    expect(again.text).toBe(first.text);
    await t.jobs.waitForIdle();
    expect(await submissionsTo('replay@example.test')).toBe(1);
    expect(mailsTo('replay@example.test')).toHaveLength(1);
  });

  it('the same key with another body or path → 422; the first answer is still replayed', async () => {
    const key = newKey();
    const first = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'mismatch@example.test'),
    });
    expect(first.status).toBe(200);
    const otherBody = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'other@example.test'),
    });
    expect(otherBody.status).toBe(422);
    expect(otherBody.json).toEqual({
      error:
        'This Idempotency-Key was already used with a different request (method, path or body); ' +
        'use a new key for a new request.',
    });
    const otherPath = await send('POST', '/api/submissions/init', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'mismatch@example.test'),
    });
    expect(otherPath.status).toBe(422);
    expect(await submissionsTo('other@example.test')).toBe(0);
    const replay = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'mismatch@example.test'),
    });
    expect([replay.status, replay.replayed, replay.text]).toEqual([200, 'true', first.text]);
  });

  it('another API key of the same account never gets a kept answer: the same request is a different one', async () => {
    // A read-only key (src/accounts/key-scopes.ts) must not read what a write key's request answered.
    const { token: readOnly } = await createApiKey(t.db, { userId: alice.userId, scopes: ['read'] });
    const { token: second } = await createApiKey(t.db, { userId: alice.userId });
    const key = newKey();
    const body = submissionBody(aliceTemplate, 'per-key@example.test');
    const first = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
    expect([first.status, first.replayed]).toEqual([200, null]);
    const fromReadOnly = await send('POST', '/api/submissions', { apiKey: readOnly, key, body });
    expect([fromReadOnly.status, fromReadOnly.replayed]).toEqual([403, null]);
    expect(fromReadOnly.text).not.toBe(first.text);
    const fromSecond = await send('POST', '/api/submissions', { apiKey: second, key, body });
    expect([fromSecond.status, fromSecond.replayed]).toEqual([422, null]);
    expect(fromSecond.json.error).toMatch(/Idempotency-Key/);
    expect(await t.db.submitter.count({ where: { email: 'per-key@example.test' } })).toBe(1);
  });

  it('keys are per account: another account with the same key runs its own request', async () => {
    const key = newKey();
    const mine = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'scoped@example.test'),
    });
    const theirs = await send('POST', '/api/submissions', {
      apiKey: bob.apiKey,
      key,
      body: submissionBody(bobTemplate, 'scoped@example.test'),
    });
    expect([mine.status, mine.replayed, theirs.status, theirs.replayed]).toEqual([200, null, 200, null]);
    expect(theirs.json[0].id).not.toBe(mine.json[0].id);
    // Each account's key still replays its own first answer.
    const mineAgain = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'scoped@example.test'),
    });
    const theirsAgain = await send('POST', '/api/submissions', {
      apiKey: bob.apiKey,
      key,
      body: submissionBody(bobTemplate, 'scoped@example.test'),
    });
    expect([mineAgain.replayed, mineAgain.text, theirsAgain.replayed, theirsAgain.text]).toEqual([
      'true',
      mine.text,
      'true',
      theirs.text,
    ]);
    expect(await submissionsTo('scoped@example.test')).toBe(2);
  });

  it('a key expires 24 h after its first request (clock seam): it runs again, the sweep deletes it', async () => {
    const key = newKey();
    const body = submissionBody(aliceTemplate, 'expiry@example.test');
    const first = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
    try {
      clockAheadMs = ONE_DAY_MS - 1000;
      const within = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
      expect([within.replayed, within.text]).toEqual(['true', first.text]);
      await t.app.idempotencyKeys.deleteExpired();
      expect(await t.db.idempotencyKey.count({ where: { key } })).toBe(1);

      clockAheadMs = ONE_DAY_MS + 1000;
      const after = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
      expect([after.status, after.replayed]).toEqual([200, null]);
      expect(after.json[0].id).not.toBe(first.json[0].id);
      expect(await submissionsTo('expiry@example.test')).toBe(2);

      // Every key made before this one is now past its 24 h; the one just made is not.
      const before = await t.db.idempotencyKey.count();
      expect(await t.app.idempotencyKeys.deleteExpired()).toBe(before - 1);
      expect(await t.db.idempotencyKey.findMany({ select: { key: true } })).toEqual([{ key }]);
    } finally {
      clockAheadMs = 0;
    }
  });

  it('keeps answers once execution began (a service refusal), not refusals of the request before it', async () => {
    // The route's reading refuses the body (before the service runs): the key is given back.
    const key = newKey();
    const unreadable = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: { template_id: aliceTemplate, submitters: 'nobody' },
    });
    expect(unreadable.status).toBe(422);
    expect(await t.db.idempotencyKey.count({ where: { key } })).toBe(0);
    // So the corrected request runs with the same key.
    const corrected = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      key,
      body: submissionBody(aliceTemplate, 'corrected@example.test'),
    });
    expect([corrected.status, corrected.replayed]).toEqual([200, null]);

    // The service refuses (another account's template: 403, once it has looked): kept and replayed.
    const refusedKey = newKey();
    const body = submissionBody(bobTemplate, 'refused@example.test');
    const refused = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: refusedKey, body });
    expect([refused.status, refused.json]).toEqual([403, { error: 'Not authorized' }]);
    const replayed = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: refusedKey, body });
    expect([replayed.status, replayed.replayed, replayed.text]).toEqual([refused.status, 'true', refused.text]);
  });

  it('refuses an empty key and one over 255 characters (422); 255 is accepted', async () => {
    const body = submissionBody(aliceTemplate, 'long-key@example.test');
    const empty = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: '', body });
    expect([empty.status, empty.json]).toEqual([422, { error: 'Idempotency-Key must not be empty.' }]);
    const long = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: 'k'.repeat(256), body });
    expect([long.status, long.json]).toEqual([
      422,
      { error: 'Idempotency-Key is too long (maximum is 255 characters).' },
    ]);
    expect(await submissionsTo('long-key@example.test')).toBe(0);
    const longest = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: 'k'.repeat(255), body });
    expect(longest.status).toBe(200);
  });

  it('a request still running holds its key: 409 until it answers, then its answer is replayed', async () => {
    // A document URL the service downloads, answered only when the test says so.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let requested!: () => void;
    const downloading = new Promise<void>((resolve) => (requested = resolve));
    const pdf = fixturePdf('documenso-letter-size.pdf');
    const files = http.createServer((_req, res) => {
      requested();
      released.then(() => res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf));
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(files.address() as AddressInfo).port}/held.pdf`;
      const key = newKey();
      const body = { name: 'Held', documents: [{ name: 'held', file: url }] };
      const first = send('POST', '/api/templates/pdf', { apiKey: alice.apiKey, key, body });
      await downloading;
      const during = await send('POST', '/api/templates/pdf', { apiKey: alice.apiKey, key, body });
      expect(during.status).toBe(409);
      expect(during.json).toEqual({
        error: 'A request with this Idempotency-Key is still in progress; retry once it has finished.',
      });
      release();
      const answered = await first;
      expect([answered.status, answered.replayed]).toEqual([200, null]);
      const after = await send('POST', '/api/templates/pdf', { apiKey: alice.apiKey, key, body });
      expect([after.status, after.replayed, after.text]).toEqual([200, 'true', answered.text]);
      expect(await t.db.template.count({ where: { name: 'Held' } })).toBe(1);
    } finally {
      release();
      files.close();
    }
  });

  it('a key whose holder stopped renewing its lock (a dead instance) is taken over once the lock passes', async () => {
    const key = newKey();
    const body = submissionBody(aliceTemplate, 'taken-over@example.test');
    // Another instance claims the key for this very request, then dies: its renewals stop.
    const dead = createIdempotencyKeys({
      db: t.db,
      logger: { warn: () => undefined },
      lockLifetimeMs: t.config.idempotencyLockLifetime,
      clock: { now: () => new Date(Date.now() + clockAheadMs) },
    });
    const fingerprint = requestFingerprint(['rest', 'POST', '/api/submissions', body]);
    expect(
      (await dead.begin({ accountId: alice.accountId, apiKeyId: alice.apiKeyId, key, fingerprint })).run,
    ).toBeDefined();
    dead.close();
    try {
      const locked = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
      expect(locked.status).toBe(409);
      clockAheadMs = t.config.idempotencyLockLifetime + 1000;
      const taken = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key, body });
      expect([taken.status, taken.replayed]).toEqual([200, null]);
      expect(await submissionsTo('taken-over@example.test')).toBe(1);
    } finally {
      clockAheadMs = 0;
    }
  });

  it('GET and DELETE ignore the header, and so do the signing form routes without an API key', async () => {
    const created = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      body: submissionBody(aliceTemplate, 'public@example.test'),
    });
    const slug = created.json[0].slug;
    const ignoredKey = newKey();
    // A GET, and the form's routes without an API key: each runs, and the key is not taken.
    const user = await send('GET', '/api/user', { apiKey: alice.apiKey, key: ignoredKey });
    expect([user.status, user.replayed]).toEqual([200, null]);
    for (let i = 0; i < 2; i += 1) {
      const viewed = await send('POST', '/api/submitter_form_views', {
        key: ignoredKey,
        body: { submitter_slug: slug },
      });
      expect([viewed.status, viewed.replayed]).toEqual([200, null]);
      const form = new FormData();
      form.set('submitter_slug', slug);
      form.set('type', 'signature');
      form.set('typed_text', 'Ada');
      const uploaded = await fetch(`${t.url}/api/attachments`, {
        method: 'POST',
        headers: { 'idempotency-key': ignoredKey },
        body: form,
      });
      expect([uploaded.status, uploaded.headers.get('idempotent-replayed')]).toEqual([200, null]);
    }
    expect(await t.db.idempotencyKey.count({ where: { key: ignoredKey } })).toBe(0);
    // So the key is free for a POST, whose answer it then replays.
    const body = submissionBody(aliceTemplate, 'after-get@example.test');
    const first = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: ignoredKey, body });
    const again = await send('POST', '/api/submissions', { apiKey: alice.apiKey, key: ignoredKey, body });
    expect([first.replayed, again.replayed, again.text]).toEqual([null, 'true', first.text]);

    // A public route with an API key honours the key (scoped to the key's account).
    const viewedKey = newKey();
    const view = () =>
      send('POST', '/api/submitter_form_views', {
        apiKey: alice.apiKey,
        key: viewedKey,
        body: { submitter_slug: slug },
      });
    expect([(await view()).replayed, (await view()).replayed]).toEqual([null, 'true']);

    // DELETE: runs each time (archiving again is harmless), no replay.
    for (let i = 0; i < 2; i += 1) {
      const archived = await send('DELETE', `/api/submissions/${created.json[0].submission_id}`, {
        apiKey: alice.apiKey,
        key: ignoredKey,
      });
      expect([archived.status, archived.replayed]).toEqual([200, null]);
    }
  });

  it('POST /api/attachments with an API key replays the first upload', async () => {
    const created = await send('POST', '/api/submissions', {
      apiKey: alice.apiKey,
      body: submissionBody(aliceTemplate, 'upload@example.test'),
    });
    const upload = () => {
      const form = new FormData();
      form.set('submitter_slug', created.json[0].slug);
      form.set('type', 'signature');
      form.set('typed_text', 'Ada Lovelace');
      return form;
    };
    const key = newKey();
    const post = async () => {
      const response = await fetch(`${t.url}/api/attachments`, {
        method: 'POST',
        headers: { 'idempotency-key': key, 'x-auth-token': alice.apiKey },
        body: upload(),
      });
      return {
        status: response.status,
        replayed: response.headers.get('idempotent-replayed'),
        text: await response.text(),
      };
    };
    const first = await post();
    const again = await post();
    expect([first.status, first.replayed]).toEqual([200, null]);
    expect([again.status, again.replayed, again.text]).toEqual([200, 'true', first.text]);
  });
});

describe('a request killed mid-flight (SIGKILL of a real service process)', () => {
  it('keeps its key locked for the lock lifetime only; then a retry on another instance runs', async () => {
    // The service downloads a document from here; the first download is never answered.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let requested!: () => void;
    const downloading = new Promise<void>((resolve) => (requested = resolve));
    const pdf = fixturePdf('documenso-letter-size.pdf');
    const files = http.createServer((_req, res) => {
      requested();
      released.then(() => res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf));
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-idempotency-'));
    const service = await startService({
      ...testServiceEnv({ databaseUrl: t.database.url, dataDir, port: await freePort() }),
      DOWNLOAD_ALLOW_PRIVATE: 'true',
    });
    try {
      const key = newKey();
      const body = {
        name: 'Killed mid-flight',
        documents: [{ name: 'doc', file: `http://127.0.0.1:${(files.address() as AddressInfo).port}/doc.pdf` }],
      };
      const cut = fetch(`${service.url}/api/templates/pdf`, {
        method: 'POST',
        headers: { 'x-auth-token': alice.apiKey, 'idempotency-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(
        () => 'answered',
        () => 'cut',
      );
      await downloading;
      const exited = new Promise((resolve) => service.child.once('exit', resolve));
      service.child.kill('SIGKILL');
      await exited;
      expect(await cut).toBe('cut');

      // This test's service is another instance on the same database: the key is held...
      release();
      const locked = await send('POST', '/api/templates/pdf', { apiKey: alice.apiKey, key, body });
      expect(locked.status).toBe(409);
      // ...until the dead holder's lock has passed (its lifetime on the clock seam, no waiting).
      clockAheadMs = t.config.idempotencyLockLifetime + 1000;
      const retried = await send('POST', '/api/templates/pdf', { apiKey: alice.apiKey, key, body });
      expect([retried.status, retried.replayed]).toEqual([200, null]);
      const replayed = await send('POST', '/api/templates/pdf', { apiKey: alice.apiKey, key, body });
      expect([replayed.replayed, replayed.text]).toEqual(['true', retried.text]);
      expect(await t.db.template.count({ where: { name: 'Killed mid-flight' } })).toBe(1);
    } finally {
      clockAheadMs = 0;
      release();
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
      files.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const CREATE = /* GraphQL */ `
  mutation Create($input: CreateSubmissionsInput!) {
    createSubmissions(input: $input) { submitters { id email embedSrc } }
  }
`;
const createInput = (templateId: number, email: string) => ({
  input: { templateId, submitters: [{ role: 'Signer', email }] },
});

describe('GraphQL mutations with an Idempotency-Key', () => {
  it('concurrent createSubmissions make one submission and one email; the others are IN_USE or replays', async () => {
    const key = newKey();
    const variables = createInput(aliceTemplate, 'gql-concurrent@example.test');
    const answers = await Promise.all(Array.from({ length: 10 }, () => gql(alice.apiKey, key, CREATE, variables)));
    const ran = answers.filter((a) => a.replayed === null && a.json.data);
    const replays = answers.filter((a) => a.replayed === 'true');
    const inUse = answers.filter((a) => a.json.errors?.[0]?.extensions?.code === 'IDEMPOTENCY_KEY_IN_USE');
    expect(ran).toHaveLength(1);
    expect(ran[0]!.json.errors).toBeUndefined();
    expect(replays.length + inUse.length).toBe(9);
    for (const replay of replays) expect([replay.status, replay.text]).toEqual([ran[0]!.status, ran[0]!.text]);
    await t.jobs.waitForIdle();
    expect(await submissionsTo('gql-concurrent@example.test')).toBe(1);
    expect(mailsTo('gql-concurrent@example.test')).toHaveLength(1);
  });

  it('replays, refuses other variables (IDEMPOTENCY_KEY_REUSED), and is per account', async () => {
    const key = newKey();
    const variables = createInput(aliceTemplate, 'gql-replay@example.test');
    const first = await gql(alice.apiKey, key, CREATE, variables);
    expect(first.json.errors).toBeUndefined();
    // Spacing in the document does not matter (it is compared printed).
    const again = await gql(alice.apiKey, key, CREATE.replace(/\s+/g, '  '), variables);
    expect([again.status, again.replayed, again.text]).toEqual([first.status, 'true', first.text]);

    const other = await gql(alice.apiKey, key, CREATE, createInput(aliceTemplate, 'gql-other@example.test'));
    expect(other.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(other.json.data).toBeUndefined();

    const bobs = await gql(bob.apiKey, key, CREATE, createInput(bobTemplate, 'gql-replay@example.test'));
    expect(bobs.replayed).toBeNull();
    expect(bobs.json.data.createSubmissions.submitters[0].id).not.toBe(
      first.json.data.createSubmissions.submitters[0].id,
    );
    expect(await submissionsTo('gql-replay@example.test')).toBe(2);
    expect(await submissionsTo('gql-other@example.test')).toBe(0);
  });

  it('keeps a result once execution began (a resolver error), not a request error (refused variables)', async () => {
    const key = newKey();
    const refused = await gql(alice.apiKey, key, CREATE, { input: { templateId: 'x', submitters: [] } });
    expect(refused.json.data).toBeUndefined();
    expect(await t.db.idempotencyKey.count({ where: { key } })).toBe(0);
    const ran = await gql(alice.apiKey, key, CREATE, createInput(aliceTemplate, 'gql-corrected@example.test'));
    expect([ran.replayed, ran.json.errors]).toEqual([null, undefined]);

    const failingKey = newKey();
    const foreign = createInput(bobTemplate, 'gql-foreign@example.test');
    const failed = await gql(alice.apiKey, failingKey, CREATE, foreign);
    expect(failed.json.errors[0].extensions.code).toBe('FORBIDDEN');
    const replay = await gql(alice.apiKey, failingKey, CREATE, foreign);
    expect([replay.replayed, replay.text]).toEqual(['true', failed.text]);
  });

  it('a mutation answered as an event stream (Accept: text/event-stream) is kept and replayed as sent', async () => {
    const key = newKey();
    const post = async () => {
      const response = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: {
          accept: 'text/event-stream',
          'content-type': 'application/json',
          'x-auth-token': alice.apiKey,
          'idempotency-key': key,
        },
        body: JSON.stringify({ query: CREATE, variables: createInput(aliceTemplate, 'gql-sse@example.test') }),
      });
      return {
        contentType: response.headers.get('content-type'),
        replayed: response.headers.get('idempotent-replayed'),
        text: await response.text(),
      };
    };
    const first = await post();
    expect(first.contentType).toMatch(/text\/event-stream/);
    expect(first.text).toMatch(/event: next/);
    const again = await post();
    expect([again.replayed, again.contentType, again.text]).toEqual(['true', first.contentType, first.text]);
    expect(await submissionsTo('gql-sse@example.test')).toBe(1);
  });

  it('a key expires after 24 h (the clock seam)', async () => {
    const key = newKey();
    const variables = createInput(aliceTemplate, 'gql-expiry@example.test');
    const first = await gql(alice.apiKey, key, CREATE, variables);
    try {
      clockAheadMs = ONE_DAY_MS - 1000;
      const within = await gql(alice.apiKey, key, CREATE, variables);
      expect([within.replayed, within.text]).toEqual(['true', first.text]);
      clockAheadMs = ONE_DAY_MS + 1000;
      const after = await gql(alice.apiKey, key, CREATE, variables);
      expect([after.replayed, after.json.errors]).toEqual([null, undefined]);
      expect(await submissionsTo('gql-expiry@example.test')).toBe(2);
    } finally {
      clockAheadMs = 0;
    }
  });

  it('queries ignore the header; createApiKey refuses it (its answer is a secret never stored)', async () => {
    const key = newKey();
    for (let i = 0; i < 2; i += 1) {
      const query = await gql(alice.apiKey, key, '{ __typename }');
      expect([query.replayed, query.json.data]).toEqual([null, { __typename: 'Query' }]);
    }
    const apiKey = await gql(alice.apiKey, key, 'mutation { createApiKey { token } }');
    expect(apiKey.json.errors[0].extensions.code).toBe('VALIDATION');
    expect(apiKey.json.errors[0].message).toMatch(/not accepted on createApiKey/);
    expect(await t.db.idempotencyKey.count({ where: { key } })).toBe(0);
  });

  it('over graphql-ws, a mutation with an Idempotency-Key in connectionParams is refused, not run', async () => {
    const client = wsClient(t.url);
    const keyed = (await import('graphql-ws')).createClient({
      url: `${t.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: (await import('ws')).default,
      connectionParams: { 'X-Auth-Token': alice.apiKey, 'Idempotency-Key': newKey() },
      retryAttempts: 0,
      lazy: true,
    });
    try {
      const result = await new Promise<any>((resolve, reject) => {
        let last: unknown;
        keyed.subscribe(
          { query: CREATE, variables: createInput(aliceTemplate, 'gql-ws@example.test') },
          { next: (value) => (last = value), error: reject, complete: () => resolve(last) },
        );
      });
      expect(result.errors[0].extensions.code).toBe('BAD_REQUEST');
      expect(result.errors[0].message).toMatch(/not supported over graphql-ws/);
      expect(await submissionsTo('gql-ws@example.test')).toBe(0);
    } finally {
      await keyed.dispose();
      await client.dispose();
    }
  });
});
