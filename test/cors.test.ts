/**
 * CORS (src/http/cors.ts, issue 12 §4): an allow-list of origins (CORS_ORIGINS, default none),
 * never credentials, on /api, /graphql and /file only; through the real HTTP service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { storeFile } from '../src/documents/store-file.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

const ALLOWED = 'https://app.example.test';
const OTHER = 'https://evil.example.test';

/** A browser's preflight for a JSON call with an API key. */
function preflight(url: string, origin: string, method = 'POST') {
  return fetch(url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'x-auth-token,content-type',
    },
  });
}

const corsHeaders = (response: Response) =>
  Object.fromEntries([...response.headers.entries()].filter(([name]) => name.startsWith('access-control-')));

describe('CORS_ORIGINS', () => {
  it(
    'takes comma-separated origins, normalised as browsers send them, or *; ' +
      'refuses anything else naming the entry',
    () => {
      const base = { DATABASE_URL: 'postgresql://x@127.0.0.1/x' };
      expect(loadConfig(base).corsOrigins).toEqual([]);
      expect(
        loadConfig({
          ...base,
          CORS_ORIGINS: ' https://App.Example.test:443/ , http://localhost:5173,https://app.example.test',
        }).corsOrigins,
      ).toEqual(['https://app.example.test', 'http://localhost:5173']);
      expect(loadConfig({ ...base, CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
      for (const bad of [
        'ftp://files.example.test',
        'https://app.example.test/path',
        'app.example.test',
        'https://u:p@app.example.test',
      ]) {
        expect(() => loadConfig({ ...base, CORS_ORIGINS: `https://ok.example.test,${bad}` })).toThrow(ConfigError);
        expect(() => loadConfig({ ...base, CORS_ORIGINS: bad })).toThrow(`CORS_ORIGINS: "${bad}" is not an origin`);
      }
    },
  );
});

describe('without CORS_ORIGINS (the default)', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp();
    key = (await t.createAccount()).apiKey;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sends no CORS header to any origin on /graphql, /api or /file, and never allows credentials', async () => {
    const gql = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { origin: OTHER, 'content-type': 'application/json', 'x-auth-token': key },
      body: JSON.stringify({ query: '{ viewer { user { id } } }' }),
    });
    expect(gql.status).toBe(200);
    expect(corsHeaders(gql)).toEqual({});
    const api = await fetch(`${t.url}/api/user`, { headers: { origin: OTHER, 'x-auth-token': key } });
    expect(api.status).toBe(200);
    expect(corsHeaders(api)).toEqual({});
    const file = await storeFile(
      { db: t.db, storage: t.app.files.storage },
      { accountId: null, bytes: Buffer.from('%PDF-1.4'), filename: 'a.pdf', contentType: 'application/pdf' },
    );
    const fileResponse = await fetch(`${t.url}${new URL(t.app.files.signer.url(file)).pathname}`, {
      headers: { origin: OTHER },
    });
    expect(fileResponse.status).toBe(200);
    expect(corsHeaders(fileResponse)).toEqual({});
    for (const path of ['/graphql', '/api/submissions', '/api/user']) {
      const response = await preflight(`${t.url}${path}`, OTHER);
      expect(corsHeaders(response), path).toEqual({});
      expect(response.status, path).not.toBe(204);
    }
  });
});

describe('with CORS_ORIGINS', () => {
  let t: TestApp;
  let key: string;
  let fileUrl: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { CORS_ORIGINS: `${ALLOWED},http://localhost:5173` } });
    key = (await t.createAccount()).apiKey;
    const file = await storeFile(
      { db: t.db, storage: t.app.files.storage },
      { accountId: null, bytes: Buffer.from('%PDF-1.4'), filename: 'a.pdf', contentType: 'application/pdf' },
    );
    fileUrl = `${t.url}${new URL(t.app.files.signer.url(file)).pathname}`;
  });
  afterAll(async () => {
    await t?.close();
  });

  it(
    'answers a preflight from an allowed origin with 204, that origin, ' + 'the API headers and no credentials',
    async () => {
      for (const url of [`${t.url}/graphql`, `${t.url}/api/submissions`, `${t.url}/api/templates/1`, fileUrl]) {
        const response = await preflight(url, ALLOWED, url === fileUrl ? 'GET' : 'POST');
        expect(response.status, url).toBe(204);
        const headers = corsHeaders(response);
        expect(headers['access-control-allow-origin'], url).toBe(ALLOWED);
        expect(headers['access-control-allow-headers']?.toLowerCase().split(/,\s*/)).toEqual(
          expect.arrayContaining(['x-auth-token', 'authorization', 'content-type', 'idempotency-key']),
        );
        expect(headers['access-control-allow-methods']?.split(/,\s*/)).toEqual(
          expect.arrayContaining(['GET', 'POST', 'PUT', 'DELETE']),
        );
        expect(headers['access-control-allow-credentials'], url).toBeUndefined();
        expect(response.headers.get('vary')).toMatch(/origin/i);
      }
    },
  );

  it("answers an allowed origin's calls with its origin, and its file downloads too", async () => {
    const api = await fetch(`${t.url}/api/user`, { headers: { origin: ALLOWED, 'x-auth-token': key } });
    expect(api.status).toBe(200);
    expect(api.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(api.headers.get('access-control-allow-credentials')).toBeNull();
    // A replay says so in a header the caller's script may read (docs/idempotency.md).
    expect(api.headers.get('access-control-expose-headers')).toMatch(/idempotent-replayed/i);
    const gql = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { origin: 'http://localhost:5173', 'content-type': 'application/json', 'x-auth-token': key },
      body: JSON.stringify({ query: '{ viewer { user { id } } }' }),
    });
    expect(gql.status).toBe(200);
    expect(gql.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(gql.headers.get('access-control-allow-credentials')).toBeNull();
    const file = await fetch(fileUrl, { headers: { origin: ALLOWED } });
    expect(file.status).toBe(200);
    expect(file.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(file.headers.get('access-control-expose-headers')).toMatch(/content-disposition/i);
    // Errors carry the header too, so the caller's script can read them.
    const unauthenticated = await fetch(`${t.url}/api/user`, { headers: { origin: ALLOWED } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('gives another origin no CORS header, on preflights and calls alike', async () => {
    for (const url of [`${t.url}/graphql`, `${t.url}/api/submissions`, fileUrl]) {
      const response = await preflight(url, OTHER);
      expect(corsHeaders(response), url).toEqual({});
      expect(response.status, url).not.toBe(204);
    }
    const api = await fetch(`${t.url}/api/user`, { headers: { origin: OTHER, 'x-auth-token': key } });
    expect(api.status).toBe(200);
    expect(corsHeaders(api)).toEqual({});
    // Almost the allowed origin: another scheme, port or a suffix is another origin.
    for (const near of [
      'http://app.example.test',
      'https://app.example.test:8443',
      'https://app.example.test.evil.example',
      'null',
    ]) {
      const response = await fetch(`${t.url}/api/user`, { headers: { origin: near, 'x-auth-token': key } });
      expect(corsHeaders(response), near).toEqual({});
    }
  });

  it('leaves paths outside /api, /graphql and /file alone, even for an allowed origin', async () => {
    const health = await fetch(`${t.url}/health`, { headers: { origin: ALLOWED } });
    expect(health.status).toBe(200);
    expect(corsHeaders(health)).toEqual({});
  });
});

describe('CORS_ORIGINS=*', () => {
  it('allows every origin with `*`, still without credentials', async () => {
    const t = await startTestApp({ env: { CORS_ORIGINS: '*' } });
    try {
      const response = await preflight(`${t.url}/api/submissions`, OTHER);
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    } finally {
      await t.close();
    }
  });
});
