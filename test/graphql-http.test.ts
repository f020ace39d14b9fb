/**
 * GraphQL over HTTP statuses (issue 23 §8; src/graphql/http-statuses.ts, docs/idempotency.md,
 * docs/security.md "GraphQL over HTTP: statuses"), each case sent with both media types of the
 * GraphQL-over-HTTP spec on a real server: a refused Idempotency-Key (reused for another
 * operation, still in use, empty, too long, on createApiKey) is 409 or 422 like REST with
 * `Accept: application/graphql-response+json`, 200 with `application/json` (and no Accept), its
 * `extensions.code` in the body either way; answers whose execution began stay 200; requests that
 * are not well-formed (a body that is not JSON, too large, of another content type, GET variables
 * that are not JSON, a subscription not accepting an event stream) are 4xx with a GraphQL error
 * body whatever the media type; none is a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { createIdempotencyKeys, requestFingerprint } from '../src/accounts/idempotency-keys.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let sequence = 0;
const newKey = () => `http-status-${Date.now()}-${(sequence += 1)}`;

const GRAPHQL_RESPONSE = 'application/graphql-response+json';
const JSON_MEDIA = 'application/json';
/** What a client may accept: the spec's media type, the legacy one, and nothing (answered as application/json). */
const ACCEPTS = [GRAPHQL_RESPONSE, JSON_MEDIA, undefined] as const;

const SET_PREFERENCES =
  'mutation ($combine: Boolean) { updateAccountPreferences(input: {combinePdfResult: $combine}) { id } }';

interface Answer {
  status: number;
  contentType: string | null;
  json: any;
}

async function post(
  body: string,
  options: { accept?: string; apiKey?: string; idempotencyKey?: string; contentType?: string | null } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.contentType !== null) headers['content-type'] = options.contentType ?? 'application/json';
  if (options.accept) headers.accept = options.accept;
  if (options.apiKey) headers['x-auth-token'] = options.apiKey;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const response = await fetch(`${t.url}/graphql`, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), json: JSON.parse(text) };
}

const operation = (query: string, variables?: Record<string, unknown>) => JSON.stringify({ query, variables });

/** The status expected of an answer without `data` refused with `status`, by media type accepted. */
const expected = (accept: string | undefined, status: number) => (accept === GRAPHQL_RESPONSE ? status : 200);

beforeAll(async () => {
  t = await startTestApp({ env: { MAX_BODY_SIZE_MB: '1' } });
  alice = await t.createAccount({ email: 'alice@http-statuses.test' });
  bob = await t.createAccount({ email: 'bob@http-statuses.test' });
});
afterAll(async () => {
  await t?.close();
});

describe('a refused Idempotency-Key over GraphQL', () => {
  it('used before for another operation: 422 IDEMPOTENCY_KEY_REUSED (graphql-response+json), else 200', async () => {
    const key = newKey();
    const first = await post(operation(SET_PREFERENCES, { combine: true }), {
      apiKey: alice.apiKey,
      idempotencyKey: key,
    });
    expect([first.status, first.json]).toEqual([200, { data: { updateAccountPreferences: { id: alice.accountId } } }]);
    for (const accept of ACCEPTS) {
      const other = await post(operation(SET_PREFERENCES, { combine: false }), {
        accept,
        apiKey: alice.apiKey,
        idempotencyKey: key,
      });
      expect([other.status, other.contentType], String(accept)).toEqual([
        expected(accept, 422),
        `${accept ?? JSON_MEDIA}; charset=utf-8`,
      ]);
      expect(other.json.data).toBeUndefined();
      expect(other.json.errors).toEqual([
        {
          message:
            'This Idempotency-Key was already used with a different request (method, path or body); ' +
            'use a new key for a new request.',
          extensions: { code: 'IDEMPOTENCY_KEY_REUSED' },
        },
      ]);
    }
  });

  it('still in use by its first request: 409 IDEMPOTENCY_KEY_IN_USE (graphql-response+json), else 200', async () => {
    const key = newKey();
    const variables = { combine: true };
    // Another instance holds the key for this very operation (as while its first request runs).
    const holder = createIdempotencyKeys({
      db: t.db,
      logger: { warn: () => undefined },
      lockLifetimeMs: t.config.idempotencyLockLifetime,
    });
    const { print, parse } = await import('graphql');
    const fingerprint = requestFingerprint(['graphql', print(parse(SET_PREFERENCES)), null, variables]);
    const claim = await holder.begin({ accountId: alice.accountId, apiKeyId: alice.apiKeyId, key, fingerprint });
    expect(claim.run).toBeDefined();
    try {
      for (const accept of ACCEPTS) {
        const during = await post(operation(SET_PREFERENCES, variables), {
          accept,
          apiKey: alice.apiKey,
          idempotencyKey: key,
        });
        expect(during.status, String(accept)).toBe(expected(accept, 409));
        expect(during.json.errors[0].extensions).toEqual({ code: 'IDEMPOTENCY_KEY_IN_USE' });
        expect(during.json.data).toBeUndefined();
      }
    } finally {
      await claim.run?.release();
      holder.close();
    }
  });

  it('empty, too long, or on createApiKey: 422 VALIDATION (graphql-response+json), else 200', async () => {
    const cases = [
      { key: '', query: SET_PREFERENCES, message: 'Idempotency-Key must not be empty.' },
      {
        key: 'k'.repeat(256),
        query: SET_PREFERENCES,
        message: 'Idempotency-Key is too long (maximum is 255 characters).',
      },
      {
        key: newKey(),
        query: 'mutation { createApiKey { token } }',
        message: 'Idempotency-Key is not accepted on createApiKey: its answer holds a secret that is never stored.',
      },
    ];
    for (const { key, query, message } of cases)
      for (const accept of ACCEPTS) {
        const refused = await post(operation(query, { combine: true }), {
          accept,
          apiKey: alice.apiKey,
          idempotencyKey: key,
        });
        expect(refused.status, `${message} ${accept}`).toBe(expected(accept, 422));
        expect(refused.json.errors).toEqual([{ message, extensions: { code: 'VALIDATION' } }]);
      }
    expect(await t.db.idempotencyKey.count({ where: { accountId: alice.accountId, key: cases[2]!.key } })).toBe(0);
  });

  it('execution began: 200 with either media type (a success, its replay, a resolver’s refusal)', async () => {
    for (const accept of ACCEPTS) {
      const key = newKey();
      const ran = await post(operation(SET_PREFERENCES, { combine: true }), {
        accept,
        apiKey: alice.apiKey,
        idempotencyKey: key,
      });
      const replay = await post(operation(SET_PREFERENCES, { combine: true }), {
        accept,
        apiKey: alice.apiKey,
        idempotencyKey: key,
      });
      expect([ran.status, replay.status], String(accept)).toEqual([200, 200]);
      // An unknown template: NOT_FOUND from the resolver, `data: null`.
      const foreign = await post(
        operation('mutation ($id: Int!) { archiveTemplate(input: {id: $id}) { template { id } } }', { id: 999_999 }),
        { accept, apiKey: bob.apiKey, idempotencyKey: newKey() },
      );
      expect([foreign.status, foreign.json.data], String(accept)).toEqual([200, null]);
      expect(foreign.json.errors[0].extensions.code).toBe('NOT_FOUND');
    }
  });
});

describe('requests that are not well-formed: 4xx with a GraphQL error body, whatever the media type', () => {
  const cases: { name: string; send: (accept: string | undefined) => Promise<Answer>; status: number; code: string }[] =
    [
      {
        name: 'a body that is not JSON',
        send: (accept) => post('{"query": ', { accept, apiKey: alice.apiKey }),
        status: 400,
        code: 'BAD_REQUEST',
      },
      {
        name: 'a body over MAX_BODY_SIZE_MB',
        send: (accept) =>
          post(operation('{ __typename }', { pad: 'x'.repeat(1_100_000) }), { accept, apiKey: alice.apiKey }),
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
      },
      {
        name: 'a text/plain body',
        send: (accept) =>
          post(operation('{ __typename }'), { accept, apiKey: alice.apiKey, contentType: 'text/plain' }),
        status: 415,
        code: 'BAD_REQUEST',
      },
      {
        name: 'no content type',
        send: (accept) => post(operation('{ __typename }'), { accept, apiKey: alice.apiKey, contentType: null }),
        status: 415,
        code: 'BAD_REQUEST',
      },
      {
        name: 'an XML body',
        send: (accept) => post('<query/>', { accept, apiKey: alice.apiKey, contentType: 'application/xml' }),
        status: 415,
        code: 'BAD_REQUEST',
      },
      {
        name: 'GET with variables that are not JSON',
        send: async (accept) => {
          const response = await fetch(
            `${t.url}/graphql?query=${encodeURIComponent('query ($n: Int) { __typename }')}&variables=%7Bn`,
            { headers: { 'x-auth-token': alice.apiKey, ...(accept ? { accept } : {}) } },
          );
          return {
            status: response.status,
            contentType: response.headers.get('content-type'),
            json: await response.json(),
          };
        },
        status: 400,
        code: 'BAD_REQUEST',
      },
      {
        name: '`variables` that are not an object',
        send: (accept) =>
          post(JSON.stringify({ query: '{ __typename }', variables: 'x' }), { accept, apiKey: alice.apiKey }),
        status: 400,
        code: 'BAD_REQUEST',
      },
    ];

  for (const { name, send, status, code } of cases)
    it(`${name}: ${status} ${code}`, async () => {
      for (const accept of ACCEPTS) {
        const answer = await send(accept);
        expect([answer.status, answer.contentType], `${name} ${accept}`).toEqual([
          status,
          `${accept ?? JSON_MEDIA}; charset=utf-8`,
        ]);
        expect(answer.json.errors).toHaveLength(1);
        expect(answer.json.errors[0].extensions.code, `${name} ${accept}`).toBe(code);
        expect(typeof answer.json.errors[0].message).toBe('string');
      }
    });

  it('a subscription over HTTP that does not accept an event stream: 406 with a GraphQL error body', async () => {
    for (const accept of [GRAPHQL_RESPONSE, JSON_MEDIA]) {
      const answer = await post(operation('subscription { formEvents { eventType } }'), {
        accept,
        apiKey: alice.apiKey,
      });
      expect([answer.status, answer.json.errors[0].extensions.code], accept).toEqual([406, 'BAD_REQUEST']);
    }
  });
});

describe('well-formed requests GraphQL refuses before execution', () => {
  const cases = [
    { name: 'a syntax error', body: operation('{ viewer { '), code: 'GRAPHQL_PARSE_FAILED', json: 200 },
    { name: 'an unknown field', body: operation('{ nope }'), code: 'GRAPHQL_VALIDATION_FAILED', json: 200 },
    // graphql-js's variable errors carry no code; the executor answers them 400 with either media type.
    {
      name: 'a variable of the wrong type',
      body: operation('query ($id: Int!) { template(id: $id) { id } }', { id: 'x' }),
      code: undefined,
      json: 400,
    },
    {
      name: 'a missing variable',
      body: operation('query ($id: Int!) { template(id: $id) { id } }'),
      code: undefined,
      json: 400,
    },
  ];
  for (const { name, body, code, json } of cases)
    it(`${name}: 400 with graphql-response+json, ${json} with application/json`, async () => {
      for (const accept of ACCEPTS) {
        const answer = await post(body, { accept, apiKey: alice.apiKey });
        expect([answer.status, answer.json.errors[0].extensions?.code], `${name} ${accept}`).toEqual([
          accept === GRAPHQL_RESPONSE ? 400 : json,
          code,
        ]);
      }
    });

  it('a key that does not authenticate: execution began, so 200 with `data: null` and UNAUTHENTICATED', async () => {
    for (const accept of ACCEPTS) {
      const answer = await post(operation('{ viewer { user { id } } }'), { accept, apiKey: 'not-a-key' });
      expect([answer.status, answer.json.data, answer.json.errors[0].extensions.code]).toEqual([
        200,
        null,
        'UNAUTHENTICATED',
      ]);
    }
  });
});
