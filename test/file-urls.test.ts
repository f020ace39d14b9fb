/**
 * Signed file URLs (`/file/<token>/<filename>`, reference/docuseal-behaviour.md §10.7): the
 * signer on its own, then the route through the real HTTP service.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentDisposition, parseRange } from '../src/documents/file-routes.ts';
import { createFileUrlSigner } from '../src/documents/file-urls.ts';
import { SECRET_KEY_BASE_FILE } from '../src/documents/secret-key.ts';
import { storeFile } from '../src/documents/store-file.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

const UUID = '0b7e4c9a-1f2d-4e3b-9a8c-7d6e5f4a3b2c';
const SECRET = 'a'.repeat(64);
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

describe('createFileUrlSigner', () => {
  const signer = createFileUrlSigner({ appUrl: 'https://sign.example.test/', secret: SECRET, ttlMs: 40 * 60_000 });

  it('makes <APP_URL>/file/<token>/<url-encoded filename> that verifies to the uuid', () => {
    const url = signer.url({ uuid: UUID, filename: 'Vertrag März #1.pdf' }, { now: NOW });
    const match = /^https:\/\/sign\.example\.test\/file\/([^/]+)\/(.+)$/.exec(url);
    expect(match).not.toBeNull();
    expect(match![2]).toBe('Vertrag%20M%C3%A4rz%20%231.pdf');
    expect(signer.verify(match![1], NOW)).toEqual({ ok: true, uuid: UUID, expiresAt: NOW + 40 * 60_000 });
  });

  it('carries the uuid, purpose "blob" and the expiry in unix seconds (default 40 minutes)', () => {
    const token = signer.token(UUID, { now: NOW });
    const [payload] = token.split('--');
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toEqual({
      id: UUID,
      pur: 'blob',
      exp: NOW / 1000 + 2400,
    });
    expect(token).toMatch(/^[A-Za-z0-9_-]+--[A-Za-z0-9_-]{43}$/);
  });

  it('expires at the expiry second; ttlMs per URL overrides the default', () => {
    const token = signer.token(UUID, { now: NOW });
    expect(signer.verify(token, NOW + 40 * 60_000 - 1).ok).toBe(true);
    expect(signer.verify(token, NOW + 40 * 60_000)).toEqual({ ok: false, reason: 'expired' });
    const short = signer.token(UUID, { now: NOW, ttlMs: 5000 });
    expect(signer.verify(short, NOW + 4999).ok).toBe(true);
    expect(signer.verify(short, NOW + 5000)).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses forged, garbled and foreign tokens as invalid (even when they would also be expired)', () => {
    const token = signer.token(UUID, { now: NOW });
    const [payload, signature] = [token.slice(0, -45), token.slice(-43)];
    const flipped = `${payload}--${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    const otherUuid = Buffer.from(
      JSON.stringify({ id: UUID.replace(/^0/, '1'), pur: 'blob', exp: NOW / 1000 + 2400 }),
    ).toString('base64url');
    const otherPurpose = createFileUrlSigner({ appUrl: 'x', secret: SECRET, ttlMs: 1 });
    const otherSecret = createFileUrlSigner({ appUrl: 'x', secret: 'b'.repeat(64), ttlMs: 40 * 60_000 });
    // The last base64url character of a 32-byte digest has 2 spare bits: another spelling of the same digest.
    const last = signature.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = `${payload}--${signature.slice(0, -1)}${alphabet[alphabet.indexOf(last) ^ 1]}`;

    for (const bad of [
      flipped,
      `${otherUuid}--${signature}`,
      otherSecret.token(UUID, { now: NOW }),
      respelled,
      '',
      'abc',
      `${payload}-${signature}`,
      `${token}x`,
      'x'.repeat(600),
    ]) {
      expect(signer.verify(bad, NOW)).toEqual({ ok: false, reason: 'invalid' });
      expect(signer.verify(bad, NOW + 10 * 3600_000)).toEqual({ ok: false, reason: 'invalid' });
    }
    expect(otherPurpose.verify(token, NOW).ok).toBe(true); // same secret: appUrl and ttl do not matter
  });
});

describe('parseRange and contentDisposition', () => {
  it('parses single byte ranges per RFC 9110 and ignores what it does not handle', () => {
    expect(parseRange(undefined, 100)).toBeUndefined();
    expect(parseRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 });
    expect(parseRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange('bytes=90-1000', 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange('bytes=-1000', 100)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=150-200', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-0', 0)).toBe('unsatisfiable');
    for (const ignored of ['bytes=0-1,5-6', 'bytes=9-1', 'items=0-1', 'bytes=-', 'bytes=a-b', 'bytes 0-1']) {
      expect(parseRange(ignored, 100)).toBeUndefined();
    }
  });

  it('gives an ASCII fallback and the exact name as RFC 8187 filename*', () => {
    expect(contentDisposition('inline', 'Vertrag "März" 100%.pdf')).toBe(
      `inline; filename="Vertrag _M_rz_ 100_.pdf"; filename*=UTF-8''Vertrag%20%22M%C3%A4rz%22%20100%25.pdf`,
    );
    expect(contentDisposition('attachment', "it's (1).pdf")).toBe(
      `attachment; filename="it's (1).pdf"; filename*=UTF-8''it%27s%20%281%29.pdf`,
    );
  });
});

describe('GET/HEAD /file/:token/:filename', () => {
  let t: TestApp;
  let bytes: Buffer;
  let pdf: { uuid: string; filename: string };
  /** Path (and query) of a signed URL, fetched from the test server. */
  const deps = () => ({ db: t.db, storage: t.app.files.storage });
  const fetchSigned = (signed: string, init?: RequestInit) => {
    const url = new URL(signed);
    return fetch(`${t.url}${url.pathname}${url.search}`, init);
  };

  beforeAll(async () => {
    t = await startTestApp();
    bytes = randomBytes(1000);
    const { accountId } = await t.createAccount();
    pdf = await storeFile(deps(), { accountId, bytes, filename: 'Vertrag März.pdf', contentType: 'application/pdf' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps the bytes under DATA_DIR/files and the generated secret under DATA_DIR by default', async () => {
    const row = await t.db.storedFile.findUniqueOrThrow({ where: { uuid: pdf.uuid } });
    expect(await fs.readFile(path.join(t.config.dataDir, 'files', row.storageKey))).toEqual(bytes);
    expect((await fs.stat(path.join(t.config.dataDir, SECRET_KEY_BASE_FILE))).mode & 0o777).toBe(0o600);
  });

  it('serves the bytes with the row type, length, inline disposition and the §10.7 headers', async () => {
    const response = await fetchSigned(t.app.files.signer.url(pdf));

    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-length')).toBe('1000');
    expect(response.headers.get('content-disposition')).toBe(
      `inline; filename="Vertrag M_rz.pdf"; filename*=UTF-8''Vertrag%20M%C3%A4rz.pdf`,
    );
    // Private (an account's document), and fresh no longer than the URL's 40 minutes.
    const cacheControl = response.headers.get('cache-control')!;
    expect(cacheControl).toMatch(/^private, max-age=\d+, immutable$/);
    const maxAge = Number(/max-age=(\d+)/.exec(cacheControl)![1]);
    expect(maxAge).toBeGreaterThan(40 * 60 - 5);
    expect(maxAge).toBeLessThanOrEqual(40 * 60);
    expect(response.headers.get('x-robots-tag')).toBe('noindex');
    // No CORS without CORS_ORIGINS (test/cors.test.ts covers allowed origins).
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it(
    "caches a URL's file no longer than the URL is valid, privately, " + 'and answers other origins without CORS',
    async () => {
      // A URL with 90 s left (signed 40 minutes ago less 90 s): max-age is the time left, never more.
      const signed = t.app.files.signer.url(pdf, { now: Date.now() - (40 * 60 - 90) * 1000 });
      for (const method of ['GET', 'HEAD']) {
        const response = await fetchSigned(signed, { method, headers: { origin: 'https://evil.example' } });
        expect(response.status).toBe(200);
        const cacheControl = response.headers.get('cache-control')!;
        expect(cacheControl).toMatch(/^private, max-age=\d+, immutable$/);
        const maxAge = Number(/max-age=(\d+)/.exec(cacheControl)![1]);
        expect(maxAge).toBeGreaterThanOrEqual(80);
        expect(maxAge).toBeLessThanOrEqual(90);
        expect(response.headers.get('access-control-allow-origin')).toBeNull();
        expect(response.headers.get('access-control-allow-credentials')).toBeNull();
        await response.arrayBuffer();
      }
    },
  );

  it('ignores the filename part of the path', async () => {
    const signed = new URL(t.app.files.signer.url(pdf));
    const response = await fetch(`${t.url}${signed.pathname.replace(/[^/]+$/, 'anything-else.txt')}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toContain('Vertrag%20M%C3%A4rz.pdf');
    await response.arrayBuffer();
  });

  it('answers HEAD with the headers and no body', async () => {
    const response = await fetchSigned(t.app.files.signer.url(pdf), { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('1000');
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it('offers a download with ?disposition=attachment', async () => {
    const response = await fetchSigned(`${t.app.files.signer.url(pdf)}?disposition=attachment`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; /);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes);
  });

  it('serves single byte ranges with 206 and Content-Range', async () => {
    const url = t.app.files.signer.url(pdf);
    const cases: [string, number, number][] = [
      ['bytes=10-19', 10, 19],
      ['bytes=990-', 990, 999],
      ['bytes=-5', 995, 999],
      ['bytes=900-5000', 900, 999],
    ];
    for (const [range, start, end] of cases) {
      const response = await fetchSigned(url, { headers: { range } });
      expect(response.status, range).toBe(206);
      expect(response.headers.get('content-range')).toBe(`bytes ${start}-${end}/1000`);
      expect(response.headers.get('content-length')).toBe(String(end - start + 1));
      expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes.subarray(start, end + 1));
    }
  });

  it('answers 416 with Content-Range bytes */size for an unsatisfiable range', async () => {
    const response = await fetchSigned(t.app.files.signer.url(pdf), { headers: { range: 'bytes=1000-' } });
    expect(response.status).toBe(416);
    expect(response.headers.get('content-range')).toBe('bytes */1000');
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it('sends the whole file for several ranges, a stale If-Range, or a Range on HEAD', async () => {
    const url = t.app.files.signer.url(pdf);
    const multi = await fetchSigned(url, { headers: { range: 'bytes=0-1,5-6' } });
    expect(multi.status).toBe(200);
    expect(Buffer.from(await multi.arrayBuffer())).toEqual(bytes);

    const etag = multi.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    const current = await fetchSigned(url, { headers: { range: 'bytes=0-1', 'if-range': etag } });
    expect(current.status).toBe(206);
    await current.arrayBuffer();
    const stale = await fetchSigned(url, { headers: { range: 'bytes=0-1', 'if-range': '"other"' } });
    expect(stale.status).toBe(200);
    expect(Buffer.from(await stale.arrayBuffer())).toEqual(bytes);

    const head = await fetchSigned(url, { method: 'HEAD', headers: { range: 'bytes=0-1' } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('1000');
  });

  it('answers an expired token with 403 {"error":"Not authorized"} and no bytes', async () => {
    const expired = t.app.files.signer.url(pdf, { now: Date.now() - 41 * 60_000 });
    for (const method of ['GET', 'HEAD']) {
      const response = await fetchSigned(expired, { method, headers: { range: 'bytes=0-9' } });
      expect(response.status).toBe(403);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = await response.text();
      if (method === 'GET') expect(JSON.parse(body)).toEqual({ error: 'Not authorized' });
      expect(body).not.toContain(bytes.subarray(0, 10).toString('latin1'));
    }
  });

  it('answers forged, garbled or foreign tokens, and unknown files, with 404 and an empty body', async () => {
    const token = t.app.files.signer.token(pdf.uuid);
    const payload = token.slice(0, -45);
    const signature = token.slice(-43);
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const otherUuidPayload = Buffer.from(
      JSON.stringify({ ...claims, id: '00000000-0000-4000-8000-000000000000' }),
    ).toString('base64url');
    const otherSecret = createFileUrlSigner({ appUrl: t.url, secret: 'z'.repeat(64), ttlMs: 60_000 });
    const tokens = [
      `${payload}--${signature.slice(0, 5)}${signature[5] === 'x' ? 'y' : 'x'}${signature.slice(6)}`,
      `${otherUuidPayload}--${signature}`,
      otherSecret.token(pdf.uuid),
      t.app.files.signer.token('00000000-0000-4000-8000-000000000000'),
      'not-a-token',
    ];
    for (const bad of tokens) {
      for (const method of ['GET', 'HEAD']) {
        const response = await fetch(`${t.url}/file/${bad}/x.pdf`, { method });
        expect(response.status, `${method} ${bad}`).toBe(404);
        expect(await response.text()).toBe('');
      }
    }
  });

  it('refuses a stored filename with a dangerous extension with 422 and an empty body', async () => {
    for (const filename of ['setup.exe', 'run.SH', 'tool.dll', 'app.apk', 'x.js', 'y.bat', 'trailing.exe. ']) {
      const file = await storeFile(deps(), {
        accountId: null,
        bytes: Buffer.from('MZ'),
        filename,
        contentType: 'application/octet-stream',
      });
      const response = await fetchSigned(t.app.files.signer.url(file));
      expect(response.status, filename).toBe(422);
      expect(await response.text()).toBe('');
    }
  });

  it('serves active content types (HTML, SVG) as attachments of type application/octet-stream', async () => {
    const html = await storeFile(deps(), {
      accountId: null,
      bytes: Buffer.from('<script>alert(1)</script>'),
      filename: 'page.html',
      contentType: 'text/html; charset=utf-8',
    });
    const response = await fetchSigned(t.app.files.signer.url(html));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; /);
    await response.arrayBuffer();
  });

  it('serves an empty file and answers any range on it with 416', async () => {
    const empty = await storeFile(deps(), {
      accountId: null,
      bytes: new Uint8Array(),
      filename: 'empty.pdf',
      contentType: 'application/pdf',
    });
    const response = await fetchSigned(t.app.files.signer.url(empty));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('0');
    const ranged = await fetchSigned(t.app.files.signer.url(empty), { headers: { range: 'bytes=0-' } });
    expect(ranged.status).toBe(416);
    expect(ranged.headers.get('content-range')).toBe('bytes */0');
  });
});

describe('buildApp with a given storage and signer', () => {
  it('uses them, and a short ttl expires the URL', async () => {
    // A minute: short against the default 40 (a URL made 2 minutes ago is stale only with this signer),
    // long enough that the fresh URL is still valid when a busy machine gets to fetch it (1 s was not).
    const signer = createFileUrlSigner({ appUrl: 'https://files.example.test', secret: SECRET, ttlMs: 60_000 });
    const t = await startTestApp({ signer });
    try {
      expect(t.app.files.signer).toBe(signer);
      const file = await storeFile(
        { db: t.db, storage: t.app.files.storage },
        { accountId: null, bytes: Buffer.from('%PDF'), filename: 'a.pdf', contentType: 'application/pdf' },
      );
      const fresh = new URL(signer.url(file));
      expect(fresh.origin).toBe('https://files.example.test');
      expect((await fetch(`${t.url}${fresh.pathname}`)).status).toBe(200);
      const stale = new URL(signer.url(file, { now: Date.now() - 120_000 }));
      expect((await fetch(`${t.url}${stale.pathname}`)).status).toBe(403);
    } finally {
      await t.close();
    }
  });
});
