/**
 * The HTTP host: GraphiQL in development only, `GET /` naming the service and its links, masked
 * unexpected GraphQL errors, graceful stop.
 */
import fs from 'node:fs';
import path from 'node:path';
import { freePort as closedPort } from './helpers/processes.ts';
import { afterEach, describe, expect, it } from 'vitest';
import type { RestRoute } from '../rest-compat/gateway.ts';
import { AppError } from '../src/errors.ts';
import { createMaskError } from '../src/graphql/errors.ts';
import { PROJECT_ROOT } from '../src/paths.ts';
import { GraphQLError } from 'graphql';
import { graphql, startTestApp, type TestApp } from './helpers/app.ts';

// Each test's servers are closed when it ends: eleven idle servers held open to the end of the file
// kept their pools' connections, and with another file's services took PostgreSQL past max_connections.
const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

describe('GraphiQL', () => {
  it('is served to browsers outside production, not in production', async () => {
    const dev = await startTestApp({ env: { NODE_ENV: 'development' } });
    const prod = await startTestApp({ env: { NODE_ENV: 'production' } });
    apps.push(dev, prod);
    const page = await fetch(`${dev.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Signet GraphQL');
    const none = await fetch(`${prod.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(await none.text()).not.toContain('Signet GraphQL');
  });
});

describe('masked errors', () => {
  it('does not log expected errors', async () => {
    const t = await startTestApp();
    apps.push(t);
    const { body } = await graphql(t.url, '{ viewer { user { id } } }', { key: 'sgt_unknown' });
    expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(t.logs.filter((line) => (line.level as number) >= 40)).toEqual([]);
  });

  it('hides the cause of an unexpected error and logs it', async () => {
    const t = await startTestApp();
    apps.push(t);
    // A table missing from the database: a failure of ours, not of the request.
    await t.db.$executeRawUnsafe('ALTER TABLE api_keys RENAME TO api_keys_elsewhere');
    const { body } = await graphql(t.url, '{ viewer { user { id } } }', { key: 'sgt_anything' });
    const text = JSON.stringify(body);
    expect(body.errors?.[0]).toMatchObject({
      message: 'Unexpected error.',
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
    expect(text).not.toMatch(/api_keys|relation|postgres/i);
    const logged = t.logs.filter((line) => line.level === 50);
    expect(logged).toHaveLength(1);
    expect(JSON.stringify(logged[0])).toMatch(/api_keys/);
  });

  it('a database outage is UNAVAILABLE (503, Retry-After), its cause logged, not shown', async () => {
    const t = await startTestApp({ databaseUrl: `postgresql://postgres@127.0.0.1:${await closedPort()}/nothing` });
    apps.push(t);
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': 'sgt_anything' },
      body: JSON.stringify({ query: '{ viewer { user { id } } }' }),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    const text = await response.text();
    expect(JSON.parse(text).errors[0]).toEqual({
      message: 'Service unavailable, please try again later',
      extensions: { code: 'UNAVAILABLE', details: { retryAfterSeconds: 5 } },
    });
    expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/i);
    expect(JSON.stringify(t.logs)).toMatch(/ECONNREFUSED|reach database server/);
  });

  it('keeps AppError messages with extensions.code, masks everything else', () => {
    const mask = createMaskError();
    // As graphql-js wraps a resolver's error: extensions come from the AppError.
    const wrapped = new GraphQLError('name is required', {
      originalError: new AppError('VALIDATION', 'name is required'),
    });
    expect(wrapped.extensions).toEqual({ code: 'VALIDATION' });
    // Returned unchanged, so Yoga does not log an expected error.
    expect(mask(wrapped, 'Unexpected error.')).toBe(wrapped);
    const bare = mask(new AppError('NOT_FOUND', 'Template 5 not found'), 'Unexpected error.');
    expect(bare).toMatchObject({ message: 'Template 5 not found', extensions: { code: 'NOT_FOUND' } });
    const internal = new GraphQLError('db down', { originalError: new Error('connection refused') });
    expect(mask(internal, 'Unexpected error.')).toMatchObject({
      message: 'Unexpected error.',
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
  });
});

describe('graceful stop', () => {
  it('finishes in-flight requests, then refuses new connections', async () => {
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const slowRoute: RestRoute = {
      method: 'GET',
      path: '/test/slow',
      operation: 'query RestTestSlow { viewer { user { id } } }',
      variables: async () => {
        entered();
        await new Promise((r) => setTimeout(r, 700));
        return {};
      },
      serialize: (data) => ({ id: data.viewer.user.id }),
    };
    const t = await startTestApp({ extraRestRoutes: [slowRoute] });
    const account = await t.createAccount();
    const inFlight = fetch(`${t.url}/api/test/slow`, { headers: { 'X-Auth-Token': account.apiKey } });
    await inside;
    const stopped = t.app.stop();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: account.userId });
    await stopped;
    await expect(fetch(`${t.url}/health`)).rejects.toThrow();
    await t.database.drop();
  });
});

describe('GraphQL over SSE', () => {
  it('streams results as server-sent events when the client asks for them', async () => {
    const t = await startTestApp();
    apps.push(t);
    const account = await t.createAccount({ email: 'sse@example.test' });
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-auth-token': account.apiKey },
      body: JSON.stringify({ query: '{ viewer { user { email } } }' }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await response.text();
    expect(text).toContain('event: next');
    const data = /^data: (.+)$/m.exec(text)?.[1];
    expect(JSON.parse(data!)).toEqual({ data: { viewer: { user: { email: 'sse@example.test' } } } });
    expect(text).toContain('event: complete');
  });
});

describe('GET /', () => {
  const version = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;

  it('names the service and its version, and links to /graphql, /api, /health and the docs', async () => {
    const dev = await startTestApp({ env: { NODE_ENV: 'development' } });
    const prod = await startTestApp({ env: { NODE_ENV: 'production' } });
    apps.push(dev, prod);
    const response = await fetch(`${dev.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const index = (await response.json()) as any;
    expect(index).toMatchObject({
      service: 'Signet',
      version,
      links: { graphql: '/graphql', graphiql: '/graphql', api: '/api', health: '/health' },
      docs: { readme: 'README.md', pages: 'docs/', graphqlSchema: 'schema.graphql' },
    });
    // The docs are paths in Signet's repository: each exists.
    for (const doc of Object.values(index.docs as Record<string, string>))
      expect(fs.existsSync(path.join(PROJECT_ROOT, doc)), doc).toBe(true);
    // Every link answers (GraphiQL to a browser; /api is the REST API's base, its routes below it).
    expect((await fetch(`${dev.url}/health`)).status).toBe(200);
    expect((await fetch(`${dev.url}/graphql`, { headers: { accept: 'text/html' } })).status).toBe(200);

    // In production GraphiQL is off: no link to it.
    const inProduction = (await (await fetch(`${prod.url}/`)).json()) as any;
    expect(inProduction.version).toBe(version);
    expect(inProduction.links).toEqual({ graphql: '/graphql', api: '/api', health: '/health' });
  });

  it('is a small page with the same links for a browser (Accept: text/html first)', async () => {
    const t = await startTestApp({ env: { NODE_ENV: 'development' } });
    apps.push(t);
    const response = await fetch(`${t.url}/`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain(`Signet ${version}`);
    for (const href of ['/graphql', '/health']) expect(html).toContain(`href="${href}"`);
    expect(html).toContain('<code>/api</code>');
    // curl's */* and an API client's application/json get the JSON.
    expect((await fetch(`${t.url}/`, { headers: { accept: '*/*' } })).headers.get('content-type')).toMatch(
      /^application\/json/,
    );
  });
});

describe('unknown paths outside /api', () => {
  it('answer 404', async () => {
    const t = await startTestApp();
    apps.push(t);
    expect((await fetch(`${t.url}/nothing`)).status).toBe(404);
  });
});

it('AppError maps codes to statuses once', () => {
  expect(new AppError('UNAUTHENTICATED').status).toBe(401);
  expect(new AppError('VALIDATION', 'x').status).toBe(422);
});
