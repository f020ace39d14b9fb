/**
 * The REST gateway's shared wire behaviour (reference/docuseal-behaviour.md §2–3) and GET /api/user.
 * Extra routes registered here go through the same machinery as every DocuSeal route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { AppError } from '../src/errors.ts';
import { schema } from '../src/graphql/schema/index.ts';
import { prepareRoutes, type RestRoute } from '../rest-compat/gateway.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

const echoRoute: RestRoute = {
  method: ['POST', 'PUT'],
  path: '/test/echo/:id',
  operation: 'query RestTestEcho { viewer { user { id } } }',
  serialize: (data, request) => ({
    user_id: data.viewer.user.id,
    id: request.params.id,
    query: request.query,
    body: request.body ?? null,
  }),
  status: 201,
};
/** A route whose variables() throws `error`, as a service rejecting the request would. */
function throwingRoute(name: string, error: Error): RestRoute {
  return {
    method: 'GET',
    path: `/test/${name.toLowerCase()}`,
    operation: `query RestTest${name} { viewer { user { id } } }`,
    variables: () => {
      throw error;
    },
    serialize: () => ({}),
  };
}
const coercedRoute: RestRoute = {
  method: 'GET',
  path: '/test/coerce/:id',
  operation: 'query RestTestCoerce($id: Int!) { template(id: $id) { id } }',
  variables: (request) => ({ id: request.params.id }),
  serialize: (data) => data,
};
const failingRoute = throwingRoute('Boom', new Error('secret internal detail'));
const validatingRoute = throwingRoute('Invalid', new AppError('VALIDATION', 'email is invalid in `submitters[0]`.'));
const forbiddenRoute = throwingRoute('Forbidden', new AppError('FORBIDDEN'));
const notFoundRoute = throwingRoute('Missing', new AppError('NOT_FOUND', 'Template 999 not found'));

let t: TestApp;
let alice: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp({
    env: { MAX_BODY_SIZE_MB: '0.01' },
    extraRestRoutes: [echoRoute, coercedRoute, failingRoute, validatingRoute, forbiddenRoute, notFoundRoute],
  });
  alice = await t.createAccount({ email: 'alice@rest.test', firstName: 'Alice', lastName: 'Liddell' });
});
afterAll(async () => {
  await t?.close();
});

async function call(
  method: string,
  path: string,
  options: { key?: string; body?: string; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: { ...(options.key ? { 'X-Auth-Token': options.key } : {}), ...options.headers },
    body: options.body,
  });
  const text = await response.text();
  return { status: response.status, text, json: text ? JSON.parse(text) : undefined, headers: response.headers };
}

describe('GET /api/user', () => {
  it("returns the key's user in DocuSeal's shape", async () => {
    const { status, json, headers } = await call('GET', '/api/user', { key: alice.apiKey });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toMatch(/^application\/json/);
    expect(json).toEqual({ id: alice.userId, first_name: 'Alice', last_name: 'Liddell', email: 'alice@rest.test' });
    expect(Object.keys(json)).toEqual(['id', 'first_name', 'last_name', 'email']);
  });

  it('accepts Authorization: Bearer too', async () => {
    const { status, json } = await call('GET', '/api/user', { headers: { Authorization: `Bearer ${alice.apiKey}` } });
    expect(status).toBe(200);
    expect(json.id).toBe(alice.userId);
  });

  it('gives "" for names the user does not have (DocuSeal schema: strings)', async () => {
    const created = await t.createAccount({ email: 'nameless@rest.test' });
    await t.db.user.update({ where: { id: created.userId }, data: { firstName: null, lastName: null } });
    expect((await call('GET', '/api/user', { key: created.apiKey })).json).toEqual({
      id: created.userId,
      first_name: '',
      last_name: '',
      email: 'nameless@rest.test',
    });
  });
});

describe('authentication errors', () => {
  it('answers 401 {"error":"Not authenticated"} without, with a bad, or with a revoked key', async () => {
    const revoked = await t.createAccount({ email: 'revoked@rest.test' });
    await t.db.apiKey.update({ where: { id: revoked.apiKeyId }, data: { revokedAt: new Date() } });
    for (const key of [undefined, 'nope', revoked.apiKey]) {
      const { status, json } = await call('GET', '/api/user', { key });
      expect(status).toBe(401);
      expect(json).toEqual({ error: 'Not authenticated' });
    }
  });

  it('checks the key before anything else', async () => {
    const { status } = await call('POST', '/api/test/echo/1', { body: '{bad json' });
    expect(status).toBe(401);
  });
});

describe('request bodies', () => {
  it('parses the body as JSON whatever the Content-Type', async () => {
    for (const contentType of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const { status, json } = await call('POST', '/api/test/echo/7?limit=5', {
        key: alice.apiKey,
        body: '{"name":"x","n":[1,2]}',
        headers: contentType ? { 'content-type': contentType } : {},
      });
      expect(status).toBe(201);
      expect(json).toEqual({ user_id: alice.userId, id: '7', query: { limit: '5' }, body: { name: 'x', n: [1, 2] } });
    }
  });

  it('accepts an empty body', async () => {
    const { status, json } = await call('PUT', '/api/test/echo/1', {
      key: alice.apiKey,
      headers: { 'content-type': 'application/json' },
    });
    expect(status).toBe(201);
    expect(json.body).toBeNull();
  });

  it('answers malformed JSON with 422 {"error":"JSON parse error: ..."}', async () => {
    const { status, json } = await call('POST', '/api/test/echo/1', {
      key: alice.apiKey,
      body: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(status).toBe(422);
    expect(json.error).toMatch(/^JSON parse error: /);
  });

  it('answers a body over the limit with 413 and an error message', async () => {
    const big = JSON.stringify({ file: 'A'.repeat(20_000) });
    const { status, json } = await call('POST', '/api/test/echo/1', { key: alice.apiKey, body: big });
    expect(status).toBe(413);
    expect(json).toEqual({ error: expect.stringContaining('too large') });
  });
});

describe('error shapes', () => {
  it('answers an unknown route with 404 even when its body is malformed', async () => {
    const { status, json } = await call('POST', '/api/nothing-here', { key: alice.apiKey, body: '{bad' });
    expect(status).toBe(404);
    expect(json).toEqual({ status: 404 });
  });

  it('answers an unknown route or method with 404 {"status":404}', async () => {
    for (const [method, path] of [
      ['GET', '/api/nothing-here'],
      ['DELETE', '/api/user'],
      ['GET', '/api/templates/999/nothing'],
    ] as const) {
      const { status, json } = await call(method, path, { key: alice.apiKey });
      expect(status).toBe(404);
      expect(json).toEqual({ status: 404 });
    }
  });

  it('maps service errors to DocuSeal statuses and bodies', async () => {
    expect(await call('GET', '/api/test/invalid', { key: alice.apiKey })).toMatchObject({
      status: 422,
      json: { error: 'email is invalid in `submitters[0]`.' },
    });
    expect(await call('GET', '/api/test/forbidden', { key: alice.apiKey })).toMatchObject({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect(await call('GET', '/api/test/missing', { key: alice.apiKey })).toMatchObject({
      status: 404,
      json: { error: 'Template 999 not found' },
    });
  });

  it('answers input GraphQL refuses (variable coercion) with 422, not 500', async () => {
    const { status, json } = await call('GET', '/api/test/coerce/abc', { key: alice.apiKey });
    expect(status).toBe(422);
    expect(json.error).toContain('$id');
  });

  it('answers unexpected errors with 500 {"status":500}, logging the cause and never showing it', async () => {
    const { status, json, text } = await call('GET', '/api/test/boom', { key: alice.apiKey });
    expect(status).toBe(500);
    expect(json).toEqual({ status: 500 });
    expect(text).not.toContain('secret');
    const logged = t.logs.find((line) => line.level === 50 && JSON.stringify(line).includes('secret internal detail'));
    expect(logged).toBeDefined();
  });
});

describe('route preparation', () => {
  it('rejects at start an operation that does not validate against the schema', () => {
    expect(() =>
      prepareRoutes(schema, [
        { method: 'GET', path: '/x', operation: 'query RestX { viewer { nope } }', serialize: () => ({}) },
      ]),
    ).toThrow(/REST route GET \/x: invalid operation RestX: Cannot query field "nope"/);
  });

  it('rejects at start an unnamed operation or several operations', () => {
    expect(() =>
      prepareRoutes(schema, [
        { method: 'GET', path: '/x', operation: '{ viewer { user { id } } }', serialize: () => ({}) },
      ]),
    ).toThrow(/exactly one named operation/);
    expect(() =>
      prepareRoutes(schema, [
        {
          method: 'GET',
          path: '/x',
          operation: 'query A { viewer { user { id } } } query B { apiKeys { id } }',
          serialize: () => ({}),
        },
      ]),
    ).toThrow(/exactly one named operation/);
  });
});
