/**
 * GraphQL: API-key authentication (X-Auth-Token, Bearer, revoked keys), viewer, account scoping,
 * masked errors, and graphql-ws on the same path and port.
 */
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, startTestApp, type TestApp } from './helpers/app.ts';

const VIEWER = '{ viewer { user { id email firstName lastName } account { id name } } }';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Alice Inc', email: 'alice@example.test', firstName: 'Alice', lastName: 'A' });
  bob = await t.createAccount({ name: 'Bob Ltd', email: 'bob@example.test', firstName: 'Bob', lastName: 'B' });
});
afterAll(async () => {
  await t?.close();
});

describe('authentication', () => {
  it('resolves X-Auth-Token to the user and account', async () => {
    const { status, body } = await graphql(t.url, VIEWER, { key: alice.apiKey });
    expect(status).toBe(200);
    expect(body).toEqual({
      data: {
        viewer: {
          user: { id: alice.userId, email: 'alice@example.test', firstName: 'Alice', lastName: 'A' },
          account: { id: alice.accountId, name: 'Alice Inc' },
        },
      },
    });
  });

  it('accepts Authorization: Bearer', async () => {
    const { body } = await graphql(t.url, VIEWER, { headers: { authorization: `Bearer ${bob.apiKey}` } });
    expect(body.data.viewer.account).toEqual({ id: bob.accountId, name: 'Bob Ltd' });
  });

  it('refuses a missing or unknown key with extensions.code UNAUTHENTICATED', async () => {
    for (const key of [undefined, 'sgt_not-a-real-key', `${alice.apiKey}x`]) {
      const { body } = await graphql(t.url, VIEWER, { key });
      expect(body.data).toBeNull();
      expect(body.errors).toEqual([
        expect.objectContaining({ message: 'Not authenticated', extensions: { code: 'UNAUTHENTICATED' } }),
      ]);
    }
  });

  it('refuses a key once revoked, and the revocation is scoped to the account', async () => {
    const created = await graphql(
      t.url,
      'mutation { createApiKey(input: {name: "ci"}) { token apiKey { id name prefix revokedAt user { id } } } }',
      {
        key: alice.apiKey,
      },
    );
    const { token, apiKey } = created.body.data.createApiKey;
    expect(apiKey).toMatchObject({ name: 'ci', revokedAt: null, user: { id: alice.userId } });
    expect(token.startsWith(apiKey.prefix)).toBe(true);
    expect((await graphql(t.url, VIEWER, { key: token })).body.data.viewer.user.id).toBe(alice.userId);

    // Bob cannot revoke Alice's key: another account's record, FORBIDDEN as everywhere (test/cross-account.test.ts).
    const foreign = await graphql(t.url, `mutation { revokeApiKey(input: {id: ${apiKey.id}}) { apiKey { id } } }`, {
      key: bob.apiKey,
    });
    expect(foreign.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await graphql(t.url, VIEWER, { key: token })).body.data.viewer.user.id).toBe(alice.userId);

    const revoked = await graphql(
      t.url,
      `mutation { revokeApiKey(input: {id: ${apiKey.id}}) { apiKey { id revokedAt } } }`,
      { key: alice.apiKey },
    );
    expect(revoked.body.data.revokeApiKey.apiKey.revokedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await graphql(t.url, VIEWER, { key: token })).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('refuses the key of an archived user', async () => {
    const carol = await t.createAccount({ email: 'carol@example.test' });
    await t.db.user.update({ where: { id: carol.userId }, data: { archivedAt: new Date() } });
    expect((await graphql(t.url, VIEWER, { key: carol.apiKey })).body.errors?.[0]?.extensions?.code).toBe(
      'UNAUTHENTICATED',
    );
  });
});

describe('apiKeys', () => {
  it("lists only the caller's account keys, never tokens", async () => {
    const { body } = await graphql(t.url, '{ apiKeys { id prefix user { email account { id } } } }', {
      key: bob.apiKey,
    });
    expect(body.data.apiKeys).toHaveLength(1);
    expect(body.data.apiKeys[0].user).toEqual({ email: 'bob@example.test', account: { id: bob.accountId } });
    expect(JSON.stringify(body)).not.toContain(bob.apiKey);
  });

  it('loads keys with their users in a constant number of queries (no N+1)', async () => {
    const query = '{ apiKeys { id user { id email } } }';
    // Reads only: the once-a-minute last_used_at write is bookkeeping, not part of the query plan.
    const reads = () => t.queries.filter((sql) => /^\s*SELECT/i.test(sql)).length;
    const dave = await t.createAccount({ email: 'dave@example.test' });
    await graphql(t.url, query, { key: dave.apiKey }); // warm: last_used_at bookkeeping
    await t.resetQueries();
    await graphql(t.url, query, { key: dave.apiKey });
    await t.settleQueries();
    const withOne = reads();
    for (let i = 0; i < 4; i += 1) await graphql(t.url, 'mutation { createApiKey { token } }', { key: dave.apiKey });
    await graphql(t.url, query, { key: dave.apiKey });
    await t.resetQueries();
    const { body } = await graphql(t.url, query, { key: dave.apiKey });
    expect(body.data.apiKeys).toHaveLength(5);
    await t.settleQueries();
    expect(reads()).toBe(withOne);
    // One query authenticates (key, user and account joined), one loads the keys with their users.
    expect(withOne).toBe(2);
  });
});

describe('errors', () => {
  it('returns GraphQL validation errors as they are', async () => {
    const { body } = await graphql(t.url, '{ viewer { nope } }', { key: alice.apiKey });
    expect(body.errors?.[0]?.message).toContain('Cannot query field "nope"');
  });
});

describe('graphql-ws on /graphql', () => {
  function run(connectionParams: Record<string, unknown>): Promise<any> {
    const client = createClient({
      url: `${t.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams,
      retryAttempts: 0,
    });
    return new Promise((resolve, reject) => {
      let result: unknown;
      client.subscribe(
        { query: VIEWER },
        {
          next: (value) => {
            result = value;
          },
          error: reject,
          complete: () => {
            void client.dispose();
            resolve(result);
          },
        },
      );
    });
  }

  it('runs operations authenticated by connectionParams', async () => {
    const result = await run({ 'X-Auth-Token': alice.apiKey });
    expect(result.data.viewer.user.email).toBe('alice@example.test');
    const bearer = await run({ Authorization: `Bearer ${bob.apiKey}` });
    expect(bearer.data.viewer.user.email).toBe('bob@example.test');
  });

  it('refuses operations without a key', async () => {
    const result = await run({});
    expect(result.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
