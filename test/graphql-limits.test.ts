/**
 * GraphQL limits (issue 12 §1 "GraphQL amplification", src/graphql/limits.ts): tokens, depth,
 * aliases, directives and cost refused before execution with 400 and GRAPHQL_LIMIT_EXCEEDED, over
 * HTTP and graphql-ws, tighter without an API key; the response-size cap; introspection and
 * GraphiQL off in production. Against real servers on loopback.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { graphql, startTestApp, type TestApp } from './helpers/app.ts';
import { subscribeSse, subscribeWs, wsClient } from './helpers/subscriptions.ts';

const LIMIT = 'GRAPHQL_LIMIT_EXCEEDED';

/** `{ a0: <field> a1: <field> … }` */
const aliases = (n: number, field = '__typename') =>
  `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
/** `{ a { a { … b } } }`, `depth` levels of `a` above `b`. */
const nested = (depth: number) => `{${'a{'.repeat(depth)}b${'}'.repeat(depth + 1)}`;
/** Seven levels, valid against any schema (introspection types). */
const SEVEN_DEEP = '{ __type(name: "Query") { fields { type { fields { type { ofType { name } } } } } } }';
/** Six levels with `names` scalar leaves at the bottom: Armor's cost ≈ 26 + 7.6 × names. */
const costly = (names: number) =>
  `{ __type(name: "Query") { fields { type { fields { type { ${'name '.repeat(names)}} } } } } }`;

let t: TestApp;
let account: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp();
  account = await t.createAccount();
});
afterAll(async () => {
  await t?.close();
});

/** POST /graphql; the answer with the server's own time for it (Fastify's `responseTime`, ms). */
async function timedPost(query: string, key?: string): Promise<{ status: number; body: any; serverMs: number }> {
  const seen = t.logs.length;
  const { status, body } = await graphql(t.url, query, { key });
  let completed: Record<string, any> | undefined;
  for (let tries = 0; !completed && tries < 100; tries += 1) {
    completed = t.logs.slice(seen).find((line) => line.msg === 'request completed');
    if (!completed) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { status, body, serverMs: completed?.responseTime };
}

/**
 * The query sent 5 times without a key: each answer checked with expectLimit, and the median of
 * the server's times (a busy shared machine can pause any one request; without the limits these
 * requests take seconds).
 */
async function expectFastLimit(query: string, message: RegExp): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i += 1) {
    const answer = await timedPost(query);
    expectLimit(answer, message);
    times.push(answer.serverMs);
  }
  const median = times.sort((a, b) => a - b)[2];
  expect(median).toBeLessThan(50);
  return median;
}

function expectLimit(answer: { status: number; body: any }, message: RegExp) {
  expect(answer.status).toBe(400);
  expect(answer.body.data).toBeUndefined();
  expect(answer.body.errors).toEqual([
    expect.objectContaining({ message: expect.stringMatching(message), extensions: { code: LIMIT } }),
  ]);
}

describe('the attacks of issue 12, without a key', () => {
  it('1,500 aliases of __typename: 400 before anything runs, in under 50 ms', async () => {
    // 1,500 aliases are 4,500 tokens: the parser stops at the token limit, before the alias rule.
    await expectFastLimit(aliases(1500), /^Syntax Error: Token limit of 500 exceeded\.$/);
    expectLimit(
      await graphql(t.url, aliases(1500), { key: account.apiKey }),
      /^Syntax Error: Token limit of 1000 exceeded\.$/,
    );
  });

  it('1,500 aliases of introspection fields: 400, with or without a key', async () => {
    const query = aliases(1500, '__schema { types { name fields { name } } }');
    await expectFastLimit(query, /Token limit of 500 exceeded/);
    expectLimit(await graphql(t.url, query, { key: account.apiKey }), /Token limit of 1000 exceeded/);
  });

  it('a 3,000-deep query: 400, not a stack overflow (500)', async () => {
    await expectFastLimit(nested(3000), /Token limit of 500 exceeded/);
    expectLimit(await graphql(t.url, nested(3000), { key: account.apiKey }), /Token limit of 1000 exceeded/);
  });

  it('the deepest documents the token limit lets through are refused cleanly (lists nest one per token)', async () => {
    // 1,500 nested lists: the parser is stopped at the 1,001st token, 1,000 lists deep.
    const lists = `{ __typename(x: ${'['.repeat(1500)}${']'.repeat(1500)}) }`;
    expectLimit(await graphql(t.url, lists, { key: account.apiKey }), /Token limit of 1000 exceeded/);
    // 331 levels of fields fit in 1,000 tokens: the depth rule refuses them.
    expectLimit(
      await graphql(t.url, nested(330), { key: account.apiKey }),
      /^Syntax Error: Query depth limit of 12 exceeded, found 331\.$/,
    );
  });
});

describe('each limit, tighter without a key', () => {
  it('tokens: 500 without a key, 1,000 with one', async () => {
    const query = `{ ${'__typename '.repeat(600)}}`;
    expectLimit(await graphql(t.url, query), /^Syntax Error: Token limit of 500 exceeded\.$/);
    const withKey = await graphql(t.url, query, { key: account.apiKey });
    expect(withKey).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
  });

  it('depth: 6 without a key, 12 with one', async () => {
    expectLimit(await graphql(t.url, SEVEN_DEEP), /^Syntax Error: Query depth limit of 6 exceeded, found 7\.$/);
    const withKey = await graphql(t.url, SEVEN_DEEP, { key: account.apiKey });
    expect(withKey.status).toBe(200);
    expect(withKey.body.errors).toBeUndefined();
    expect(withKey.body.data.__type.fields.length).toBeGreaterThan(0);
  });

  it('aliases, __typename included: 10 without a key (or with an invalid one), 50 with one', async () => {
    expectLimit(await graphql(t.url, aliases(11)), /^Syntax Error: Aliases limit of 10 exceeded, found 11\.$/);
    expectLimit(await graphql(t.url, aliases(11), { key: 'sgt_not-a-real-key' }), /Aliases limit of 10 exceeded/);
    const withKey = await graphql(t.url, aliases(11), { key: account.apiKey });
    expect(withKey.status).toBe(200);
    expect(Object.keys(withKey.body.data)).toHaveLength(11);
    expectLimit(await graphql(t.url, aliases(51), { key: account.apiKey }), /Aliases limit of 50 exceeded, found 51/);
  });

  it('directives: 10 without a key, 50 with one', async () => {
    const query = `{ ${'__typename @include(if: true) '.repeat(11)}}`;
    expectLimit(await graphql(t.url, query), /^Syntax Error: Directives limit of 10 exceeded, found 11\.$/);
    expect(await graphql(t.url, query, { key: account.apiKey })).toEqual({
      status: 200,
      body: { data: { __typename: 'Query' } },
    });
  });

  it('cost: 1,000 without a key, 5,000 with one', async () => {
    expectLimit(await graphql(t.url, costly(150)), /^Syntax Error: Query Cost limit of 1000 exceeded, found [\d.]+\.$/);
    const withKey = await graphql(t.url, costly(150), { key: account.apiKey });
    expect(withKey.status).toBe(200);
    expect(withKey.body.errors).toBeUndefined();
    expectLimit(await graphql(t.url, costly(700), { key: account.apiKey }), /Query Cost limit of 5000 exceeded/);
  });

  it('a document allowed to one caller is not served from cache to the other', async () => {
    // Authenticated first: parsed, validated and cached for that caller only.
    const query = aliases(12);
    expect((await graphql(t.url, query, { key: account.apiKey })).status).toBe(200);
    expectLimit(await graphql(t.url, query), /Aliases limit of 10 exceeded, found 12/);
    // Anonymous first: the refusal is not served to an authenticated caller.
    const tokens = `{ ${'__typename '.repeat(550)}}`;
    expectLimit(await graphql(t.url, tokens), /Token limit of 500 exceeded/);
    expect((await graphql(t.url, tokens, { key: account.apiKey })).status).toBe(200);
    // And a refusal comes again from cache, with its 400.
    expectLimit(await graphql(t.url, query), /Aliases limit of 10 exceeded, found 12/);
    expectLimit(await graphql(t.url, tokens), /Token limit of 500 exceeded/);
  });

  it('answers 400 whatever the Accept header, and for GET', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json', '*/*']) {
      const response = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify({ query: aliases(11) }),
      });
      expectLimit({ status: response.status, body: await response.json() }, /Aliases limit of 10 exceeded/);
    }
    const get = await fetch(`${t.url}/graphql?query=${encodeURIComponent(nested(300))}`, {
      headers: { accept: 'application/json' },
    });
    expectLimit({ status: get.status, body: await get.json() }, /Token limit of 500 exceeded/);
  });

  it('lets every operation of the signing page through without a key (its largest selection)', async () => {
    // Its one interpolated value is the page's language (consent's argument): English here.
    const selection = /const FORM_SELECTION = `([^`]*)`/
      .exec(fs.readFileSync('src/signing-form/page/api.ts', 'utf8'))![1]!
      .replace(/\$\{[^}]*\}/g, '"en"');
    const { body } = await graphql(
      t.url,
      `mutation OpenSigningForm($slug: String!) { openSigningForm(slug: $slug) { ${selection} } }`,
      {
        variables: { slug: 'no-such-slug' },
      },
    );
    // Past the limits: the resolver runs and does not find the form.
    expect(body.errors).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'NOT_FOUND' }) }),
    ]);
  });
});

describe('over SSE and graphql-ws', () => {
  it('SSE (Accept: text/event-stream) gets the same refusal as an event', async () => {
    const { feed } = await subscribeSse(t.url, undefined, aliases(11));
    expect(await feed.next()).toEqual({
      errors: [
        expect.objectContaining({
          message: 'Syntax Error: Aliases limit of 10 exceeded, found 11.',
          extensions: { code: LIMIT },
        }),
      ],
    });
    feed.close();
    const withKey = await subscribeSse(t.url, account.apiKey, aliases(11));
    expect(Object.keys(await withKey.feed.nextData())).toHaveLength(11);
    withKey.feed.close();
  });

  it('applies the same limits per caller, and the socket stays open', async () => {
    const anonymous = wsClient(t.url);
    const authenticated = wsClient(t.url, account.apiKey);
    try {
      const refused = subscribeWs(anonymous, aliases(11));
      await expect(refused.next()).rejects.toEqual([
        expect.objectContaining({
          message: 'Syntax Error: Aliases limit of 10 exceeded, found 11.',
          extensions: { code: LIMIT },
        }),
      ]);
      const deep = subscribeWs(anonymous, nested(3000));
      await expect(deep.next()).rejects.toEqual([
        expect.objectContaining({ message: 'Syntax Error: Token limit of 500 exceeded.' }),
      ]);
      const allowed = subscribeWs(anonymous, aliases(3));
      expect(await allowed.nextData()).toEqual({ a0: 'Query', a1: 'Query', a2: 'Query' });

      const withKey = subscribeWs(authenticated, aliases(11));
      expect(Object.keys(await withKey.nextData())).toHaveLength(11);
      const deepWithKey = subscribeWs(authenticated, SEVEN_DEEP);
      expect((await deepWithKey.nextData()).__type.fields.length).toBeGreaterThan(0);
      const tooDeep = subscribeWs(authenticated, nested(13));
      await expect(tooDeep.next()).rejects.toEqual([
        expect.objectContaining({ message: expect.stringMatching(/Query depth limit of 12 exceeded/) }),
      ]);
    } finally {
      await anonymous.dispose();
      await authenticated.dispose();
    }
  });
});

describe('response size, and production', () => {
  let small: TestApp;
  let production: TestApp;
  let productionAccount: CreatedAccount;

  beforeAll(async () => {
    // ~104 bytes without a key, ~314 with one.
    small = await startTestApp({
      env: { GRAPHQL_ANONYMOUS_MAX_RESPONSE_MB: '0.0001', GRAPHQL_MAX_RESPONSE_MB: '0.0003' },
    });
    production = await startTestApp({ env: { NODE_ENV: 'production' } });
    productionAccount = await production.createAccount();
  });
  afterAll(async () => {
    await small?.close();
    await production?.close();
  });

  it('refuses a result over the size cap instead of sending it, tighter without a key', async () => {
    // {"data":{"a0":"Query",…,"a9":"Query"}}: 140 bytes.
    expectLimit(
      await graphql(small.url, aliases(10)),
      /^Response size limit of 104 bytes exceeded, found 140 bytes\. Ask for fewer fields or fewer items\.$/,
    );
    const key = (await small.createAccount()).apiKey;
    expect(await graphql(small.url, aliases(10), { key })).toMatchObject({
      status: 200,
      body: { data: { a9: 'Query' } },
    });
    expect(await graphql(small.url, aliases(3))).toEqual({
      status: 200,
      body: { data: { a0: 'Query', a1: 'Query', a2: 'Query' } },
    });

    const ws = wsClient(small.url);
    try {
      const feed = subscribeWs(ws, aliases(10));
      expect(await feed.next()).toEqual({
        errors: [
          expect.objectContaining({
            message: expect.stringMatching(/^Response size limit/),
            extensions: { code: LIMIT },
          }),
        ],
      });
    } finally {
      await ws.dispose();
    }
  });

  it('says when the mutation whose result is too large was carried out', async () => {
    const created = await small.createAccount();
    const before = await small.db.apiKey.count({ where: { userId: created.userId } });
    const mutation =
      `mutation { createApiKey(input: {name: "big"}) { token ` +
      `${Array.from({ length: 20 }, (_, i) => `t${i}: __typename`).join(' ')} } }`;
    expectLimit(
      await graphql(small.url, mutation, { key: created.apiKey }),
      new RegExp(
        /^Response size limit of 314 bytes exceeded, found \d+ bytes\. /.source +
          /The mutation was carried out; ask for fewer fields to see its result\.$/.source,
      ),
    );
    expect(await small.db.apiKey.count({ where: { userId: created.userId } })).toBe(before + 1);
  });

  it('in production, refuses introspection (with a key too) and serves no GraphiQL', async () => {
    for (const key of [undefined, productionAccount.apiKey]) {
      for (const query of ['{ __schema { queryType { name } } }', '{ __type(name: "Query") { name } }']) {
        const { body } = await graphql(production.url, query, { key });
        expect(body.data).toBeUndefined();
        expect(body.errors?.length).toBeGreaterThan(0);
        for (const error of body.errors ?? [])
          expect(error.message).toMatch(/^GraphQL introspection has been disabled/);
      }
      expect(await graphql(production.url, '{ __typename }', { key })).toEqual({
        status: 200,
        body: { data: { __typename: 'Query' } },
      });
    }
    const page = await fetch(`${production.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(await page.text()).not.toMatch(/graphiql/i);

    // Outside production (the test app): both are there.
    expect((await graphql(t.url, '{ __schema { queryType { name } } }')).body).toEqual({
      data: { __schema: { queryType: { name: 'Query' } } },
    });
    const devPage = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(await devPage.text()).toMatch(/graphiql/i);
  });
});

describe('configuration', () => {
  it('defaults, production and GRAPHQL_INTROSPECTION', () => {
    const development = loadConfig({});
    expect(development.graphql).toEqual({
      introspection: true,
      limits: {
        authenticated: {
          maxTokens: 1000,
          maxDepth: 12,
          maxAliases: 50,
          maxDirectives: 50,
          maxCost: 5000,
          maxResponseBytes: 20 * 1024 * 1024,
        },
        anonymous: {
          maxTokens: 500,
          maxDepth: 6,
          maxAliases: 10,
          maxDirectives: 10,
          maxCost: 1000,
          maxResponseBytes: 2 * 1024 * 1024,
        },
      },
    });
    expect(loadConfig({ NODE_ENV: 'production' }).graphql.introspection).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true' }).graphql.introspection).toBe(true);
  });

  it('refuses anonymous limits above the authenticated ones, and token limits the parser cannot take', () => {
    expect(() => loadConfig({ GRAPHQL_ANONYMOUS_MAX_DEPTH: '13' })).toThrow(
      new ConfigError('Invalid configuration: GRAPHQL_ANONYMOUS_MAX_DEPTH: must not exceed GRAPHQL_MAX_DEPTH'),
    );
    expect(() => loadConfig({ GRAPHQL_MAX_ALIASES: '5' })).toThrow(
      /GRAPHQL_ANONYMOUS_MAX_ALIASES: must not exceed GRAPHQL_MAX_ALIASES/,
    );
    expect(() => loadConfig({ GRAPHQL_MAX_TOKENS: '5000' })).toThrow(/GRAPHQL_MAX_TOKENS/);
    expect(
      loadConfig({ GRAPHQL_MAX_RESPONSE_MB: '0.5', GRAPHQL_ANONYMOUS_MAX_RESPONSE_MB: '0.25' }).graphql.limits.anonymous
        .maxResponseBytes,
    ).toBe(262_144);
  });

  it('`npm start` runs in production unless NODE_ENV says otherwise, as the Docker image does', () => {
    const start = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
    // Without the build step (the rest also picks LOG_FORMAT: test/first-minutes.test.ts).
    const run = start.split(' && ').slice(1).join(' && ');
    // The start command with node printing its NODE_ENV instead of starting the service.
    const probe = run.replace(
      /node .*dist\/main\.mjs$/,
      `node -e "process.stdout.write(String(process.env.NODE_ENV))"`,
    );
    expect(probe).not.toBe(run);
    const envWithout = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_ENV'));
    expect(execFileSync('sh', ['-c', probe], { env: envWithout, encoding: 'utf8' })).toBe('production');
    expect(
      execFileSync('sh', ['-c', probe], { env: { ...envWithout, NODE_ENV: 'development' }, encoding: 'utf8' }),
    ).toBe('development');
    expect(fs.readFileSync('Dockerfile', 'utf8')).toMatch(/^ENV .*\bNODE_ENV=production\b/m);
  });
});
