/**
 * Object storage (issue 18): `STORAGE_URL=s3://bucket/prefix` against a real S3 protocol server
 * on loopback (test/helpers/s3-server.ts, s3rver through `@aws-sdk/client-s3`). The storage itself
 * (keys under the prefix, put once, putNamed first write wins, ranges, deletes, missing keys,
 * presigned URLs), then the service on it: uploads and downloads through /file URLs (proxied and
 * presigned), a create → sign → complete flow with every file in S3 and none on disk, a permanent
 * delete removing the objects, the storage going down (503 + Retry-After, no rows written) and
 * coming back, and a missing bucket stopping the service at start-up.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { loadConfig } from '../src/config.ts';
import { createS3Storage, openS3Storage } from '../src/documents/s3-storage.ts';
import { MissingFileError, storageKeyFor } from '../src/documents/storage.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { strokePng } from './helpers/images.ts';
import { createTestDatabase } from './helpers/database.ts';
import { freePort, startService, testServiceEnv } from './helpers/processes.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { startS3Server, TEST_BUCKET, type TestS3Server } from './helpers/s3-server.ts';

let s3: TestS3Server;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-s3-test-'));

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [TEST_BUCKET, 'signet-other'] });
});
afterAll(async () => {
  await s3?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/** The storage on a fresh prefix of the test bucket. */
function storageOn(prefix: string): ReturnType<typeof createS3Storage> {
  return createS3Storage(loadConfig(s3.env({ prefix })).storage!);
}

describe('STORAGE_URL and the AWS variables', () => {
  it('reads s3://bucket/prefix, the endpoint, path style and the credentials', () => {
    expect(loadConfig({}).storage).toBeUndefined();
    expect(loadConfig({ STORAGE_URL: 's3://my-bucket' }).storage).toMatchObject({
      bucket: 'my-bucket',
      prefix: '',
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
      credentials: undefined,
    });
    const minio = loadConfig({
      STORAGE_URL: 's3://signet/a/b/',
      AWS_ENDPOINT_URL: 'http://minio:9000/',
      AWS_REGION: 'eu-central-1',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      STORAGE_TIMEOUT_SECONDS: '2.5',
    }).storage;
    expect(minio).toEqual({
      bucket: 'signet',
      prefix: 'a/b/',
      endpoint: 'http://minio:9000',
      publicEndpoint: undefined,
      region: 'eu-central-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
      timeout: 2500,
    });
    expect(loadConfig({ STORAGE_URL: 's3://b-1', S3_FORCE_PATH_STYLE: 'true' }).storage!.forcePathStyle).toBe(true);
    expect(loadConfig({ STORAGE_URL: 's3://b-1', FILE_URLS_PRESIGNED: 'true' }).fileUrlsPresigned).toBe(true);
  });

  it('refuses a bad URL or bucket name, half a key pair, and S3-only settings without STORAGE_URL', () => {
    for (const url of ['http://bucket/x', 's3://', 's3://Upper', 's3://a', 's3://bucket/../x'])
      expect(() => loadConfig({ STORAGE_URL: url }), url).toThrow(/STORAGE_URL/);
    expect(() => loadConfig({ STORAGE_URL: 's3://bucket', AWS_ACCESS_KEY_ID: 'id' })).toThrow(
      'set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither',
    );
    expect(() => loadConfig({ FILE_URLS_PRESIGNED: 'true' })).toThrow('FILE_URLS_PRESIGNED: needs STORAGE_URL=s3://…');
  });
});

describe('the S3 storage', () => {
  it('stores content-addressed bytes under <prefix>/sha256/…, once, and reads them whole and by range', async () => {
    const storage = storageOn('put');
    const bytes = randomBytes(70_000);
    const put = await storage.put(bytes);
    expect(put).toEqual({ key: storageKeyFor(sha256(bytes)), sha256: sha256(bytes), byteSize: 70_000 });
    expect(await s3.objectKeys()).toContain(`put/${put.key}`);

    expect((await storage.read(put.key)).equals(bytes)).toBe(true);
    expect(await storage.size(put.key)).toBe(70_000);
    expect(await storage.exists(put.key)).toBe(true);
    expect((await streamToBuffer(storage.stream(put.key))).equals(bytes)).toBe(true);
    const part = await streamToBuffer(storage.stream(put.key, { start: 1000, end: 1999 }));
    expect(part.equals(bytes.subarray(1000, 2000))).toBe(true);

    // A second put of the same bytes writes nothing: the object is not touched.
    const object = path.join(s3.directory, TEST_BUCKET, 'put', `${put.key}._S3rver_object`);
    const past = new Date('2020-01-01T00:00:00Z');
    fs.utimesSync(object, past, past);
    expect(await storage.put(bytes)).toEqual(put);
    expect(fs.statSync(object).mtime.getTime()).toBe(past.getTime());
    storage.close();
  });

  it('putNamed: the first file stays, later callers get it and `make` is not called again', async () => {
    const storage = storageOn('named');
    const first = Buffer.from('first run: signed at 10:00');
    const made = await storage.putNamed('completions/abc/audit-log.pdf', () => first);
    expect(made).toEqual({ key: 'named/completions/abc/audit-log.pdf', sha256: sha256(first), byteSize: first.length });

    let called = false;
    const again = await storage.putNamed('completions/abc/audit-log.pdf', () => {
      called = true;
      return Buffer.from('second run: signed at 10:05');
    });
    expect(called).toBe(false);
    expect(again).toEqual(made);
    expect((await storage.read(made.key)).equals(first)).toBe(true);
    expect(await s3.objectKeys()).toContain('named/named/completions/abc/audit-log.pdf');
    await expect(storage.putNamed('../escape', () => first)).rejects.toThrow(/Not a name putNamed takes/);
    storage.close();
  });

  it('sends `If-None-Match: *` with the named write, so a server that honours it keeps the first file', async () => {
    const storage = storageOn('conditional');
    const sent: Record<string, string>[] = [];
    storage.client.middlewareStack.add(
      (next) => async (args: Parameters<typeof next>[0]) => {
        sent.push({ ...(args.request as { headers: Record<string, string> }).headers });
        return next(args);
      },
      { step: 'finalizeRequest', name: 'recordHeaders' },
    );
    await storage.putNamed('c/one.pdf', () => Buffer.from('one'));
    await storage.put(Buffer.from('content-addressed'));
    const puts = sent.filter((headers) => headers['content-length'] !== undefined && headers['content-length'] !== '0');
    expect(puts.map((headers) => headers['if-none-match'])).toEqual(['*', undefined]);
    storage.close();
  });

  it('answers MissingFileError (ENOENT) for unknown and foreign keys, and deletes once and again', async () => {
    const storage = storageOn('missing');
    const absent = storageKeyFor('ab'.repeat(32));
    await expect(storage.read(absent)).rejects.toBeInstanceOf(MissingFileError);
    await expect(storage.size(absent)).rejects.toBeInstanceOf(MissingFileError);
    expect(await storage.exists(absent)).toBe(false);
    await expect(streamToBuffer(storage.stream(absent))).rejects.toMatchObject({ code: 'ENOENT' });
    // Keys this storage does not make never reach the bucket (nothing outside the prefix).
    await expect(storage.read('../put/x')).rejects.toBeInstanceOf(MissingFileError);
    expect(await storage.exists('sha256/zz')).toBe(false);

    const put = await storage.put(Buffer.from('to be deleted'));
    await storage.delete(put.key);
    expect(await storage.exists(put.key)).toBe(false);
    expect(await s3.objectKeys()).not.toContain(`missing/${put.key}`);
    await storage.delete(put.key);
    storage.close();
  });

  it('presigns GET URLs that the server serves with the headers asked for, and refuses once expired', async () => {
    const storage = storageOn('presign');
    const bytes = Buffer.from('%PDF-1.7 presigned');
    const put = await storage.put(bytes);
    const url = await storage.presignedUrl(put.key, {
      expiresInSeconds: 40 * 60,
      contentType: 'application/pdf',
      contentDisposition: 'attachment; filename="a.pdf"',
      cacheControl: 'private, max-age=60',
    });
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('2400');
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="a.pdf"');
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    const forged = new URL(url);
    forged.searchParams.set('response-content-type', 'text/html');
    expect((await fetch(forged)).status).toBe(403);

    const short = await storage.presignedUrl(put.key, {
      expiresInSeconds: 1,
      contentType: 'application/pdf',
      contentDisposition: 'inline',
      cacheControl: 'no-store',
    });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await fetch(short)).status).toBe(403);
    storage.close();
  });

  it('checks the bucket when opened: a missing bucket or refused credentials is an error naming it', async () => {
    const missing = loadConfig(s3.env({ bucket: 'no-such-bucket' })).storage!;
    await expect(openS3Storage(missing)).rejects.toThrow(
      `S3 bucket "no-such-bucket" at ${s3.endpoint} does not exist (STORAGE_URL)`,
    );
    const wrongKey = loadConfig({ ...s3.env(), AWS_SECRET_ACCESS_KEY: 'wrong' }).storage!;
    await expect(openS3Storage(wrongKey)).rejects.toThrow(
      new RegExp(`S3 bucket "${TEST_BUCKET}" at .* cannot be used .*SignatureDoesNotMatch`),
    );
    (await openS3Storage(loadConfig(s3.env()).storage!)).close();
  });
});

describe('the service on S3 storage', () => {
  let t: TestApp;
  let alice: CreatedAccount;
  const api = (method: string, route: string, body?: unknown) => rest(t.url, alice.apiKey, method, route, body);

  beforeAll(async () => {
    t = await startTestApp({ env: s3.env({ prefix: 'service' }) });
    alice = await t.createAccount({ email: 'alice@s3.test' });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The stored_files row behind a /file URL. */
  const fileBehind = async (url: string) => {
    const verified = t.app.files.signer.verify(new URL(url).pathname.split('/')[2]!);
    if (!verified.ok) throw new Error(`not a valid file URL: ${url}`);
    return t.db.storedFile.findUniqueOrThrow({ where: { uuid: verified.uuid } });
  };
  const serviceObjects = async () => (await s3.objectKeys()).filter((key) => key.startsWith('service/'));
  const onDisk = () => fs.existsSync(path.join(t.config.dataDir, 'files'));

  async function createTemplate(label: string) {
    const pdf = await drawPdf([{ texts: [{ text: label, x: 72, y: 72 }] }]);
    const area = (y: number) => [{ x: 72, y, w: 200, h: 40, page: 1 }];
    const { status, json } = await api('POST', '/templates/pdf', {
      name: label,
      documents: [{ name: label, file: base64(pdf) }],
      fields: [
        { name: 'Full Name', role: 'Signer', areas: area(120) },
        { name: 'Signature', type: 'signature', role: 'Signer', areas: area(200) },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    return { json, pdf };
  }

  it('stores an uploaded template in S3 (nothing on disk) and serves it with ranges through /file URLs', async () => {
    const before = await serviceObjects();
    const { json, pdf } = await createTemplate('Uploaded to S3');
    const row = await fileBehind(json.documents[0].url);
    expect(await serviceObjects()).toEqual(expect.arrayContaining([`service/${row.storageKey}`]));
    expect((await serviceObjects()).length).toBeGreaterThan(before.length);
    expect(onDisk()).toBe(false);

    const url = json.documents[0].url as string;
    expect(url.startsWith(`${t.url}/file/`)).toBe(true);
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('application/pdf');
    expect(Buffer.from(await whole.arrayBuffer()).equals(Buffer.from(pdf))).toBe(true);

    const ranged = await fetch(url, { headers: { range: 'bytes=5-14' } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('content-range')).toBe(`bytes 5-14/${pdf.byteLength}`);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(Buffer.from(pdf).subarray(5, 15))).toBe(true);
    const suffix = await fetch(url, { headers: { range: 'bytes=-7' } });
    expect(Buffer.from(await suffix.arrayBuffer()).toString('latin1')).toBe(
      Buffer.from(pdf).subarray(-7).toString('latin1'),
    );
    expect((await fetch(url, { headers: { range: `bytes=${pdf.byteLength}-` } })).status).toBe(416);
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe(String(pdf.byteLength));
  });

  it('create → sign → complete: the signature, the signed documents and the audit log all in S3', async () => {
    const { json: template } = await createTemplate('Signed in S3');
    const created = await api('POST', '/submissions', {
      template_id: template.id,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'signer@s3.test' }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const { slug, submission_id: submissionId } = created.json[0];

    const form = new FormData();
    form.append('submitter_slug', slug);
    form.append('type', 'signature');
    form.append('file', new Blob([new Uint8Array(await strokePng(300, 80))], { type: 'image/png' }), 'signature.png');
    const uploaded = await fetch(`${t.url}/api/attachments`, { method: 'POST', body: form });
    expect(uploaded.status).toBe(200);
    const signature = (await uploaded.json()) as { uuid: string };

    const loaded = await graphql(t.url, 'query($slug: String!) { signingForm(slug: $slug) { fields { uuid name } } }', {
      variables: { slug },
    });
    const uuidOf = (name: string) =>
      loaded.body.data.signingForm.fields.find((f: { name: string }) => f.name === name).uuid as string;
    await acceptConsentViaApi(t.url, slug);
    const completed = await graphql(
      t.url,
      'mutation($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { state } }',
      { variables: { slug, values: { [uuidOf('Full Name')]: 'Sam Signer', [uuidOf('Signature')]: signature.uuid } } },
    );
    expect(completed.body.errors).toBeUndefined();
    await t.outboxRelayed();
    await t.jobs.waitForIdle();

    const submission = (await api('GET', `/submissions/${submissionId}`)).json;
    expect(submission.status).toBe('completed');
    const submissionSlug = (await t.db.submission.findUniqueOrThrow({ where: { id: submissionId } })).slug;
    const objects = await serviceObjects();
    expect(objects.filter((key) => key.startsWith(`service/named/completions/${submissionSlug}/`))).toEqual([
      `service/named/completions/${submissionSlug}/audit-log.pdf`,
      expect.stringMatching(new RegExp(`^service/named/completions/${submissionSlug}/documents-\\d+-0\\.pdf$`)),
    ]);
    const signatureRow = await t.db.storedFile.findUniqueOrThrow({ where: { uuid: signature.uuid } });
    expect(objects).toContain(`service/${signatureRow.storageKey}`);
    expect(onDisk()).toBe(false);

    for (const [name, url] of [
      ['document.pdf', submission.documents[0].url],
      ['audit.pdf', submission.audit_log_url],
    ]) {
      const response = await fetch(url);
      expect(response.status, name).toBe(200);
      const file = path.join(tmp, name);
      fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
      expect(pdfsig(file), name).toContain('Signature is Valid');
    }
    expect(execFileSync('pdftotext', [path.join(tmp, 'document.pdf'), '-']).toString()).toContain('Sam Signer');
  });

  it('a permanent delete removes the objects only the deleted template used', async () => {
    const { json } = await createTemplate('Deleted from S3');
    const row = await fileBehind(json.documents[0].url);
    expect(await serviceObjects()).toContain(`service/${row.storageKey}`);
    const deleted = await api('DELETE', `/templates/${json.id}?permanently=true`);
    expect(deleted.status).toBe(200);
    await t.outboxRelayed();
    await t.jobs.waitForIdle();
    expect(await serviceObjects()).not.toContain(`service/${row.storageKey}`);
  });

  it('storage down: 503 with Retry-After, a create writes no row; back up: everything works again', async () => {
    const { json } = await createTemplate('Before the outage');
    const rowsBefore = { templates: await t.db.template.count(), files: await t.db.storedFile.count() };
    await s3.stop();
    try {
      const pdf = await drawPdf([{ texts: [{ text: `during the outage ${Math.random()}`, x: 72, y: 72 }] }]);
      const refused = await api('POST', '/templates/pdf', {
        name: 'During the outage',
        documents: [{ name: 'outage', file: base64(pdf) }],
      });
      expect(refused.status).toBe(503);
      expect(refused.json).toEqual({ error: 'Service unavailable, please try again later' });
      expect({ templates: await t.db.template.count(), files: await t.db.storedFile.count() }).toEqual(rowsBefore);

      const response = await fetch(json.documents[0].url);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');

      const raw = await fetch(`${t.url}/api/templates/pdf`, {
        method: 'POST',
        headers: { 'X-Auth-Token': alice.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Again', documents: [{ name: 'again', file: base64(pdf) }] }),
      });
      expect(raw.status).toBe(503);
      expect(raw.headers.get('retry-after')).toBe('5');
    } finally {
      await s3.start();
    }
    expect((await fetch(json.documents[0].url)).status).toBe(200);
    await createTemplate('After the outage');
  });
});

describe('presigned file URLs (FILE_URLS_PRESIGNED)', () => {
  let t: TestApp;
  let alice: CreatedAccount;
  // Its own server, which lets RFC 8187 filenames through (test/helpers/s3-server.ts: s3rver's
  // query encoding); the signatures themselves are checked in "the S3 storage" above.
  let lenient: TestS3Server;

  beforeAll(async () => {
    lenient = await startS3Server({ acceptAnySignature: true });
    t = await startTestApp({ env: { ...lenient.env({ prefix: 'presigned' }), FILE_URLS_PRESIGNED: 'true' } });
    alice = await t.createAccount({ email: 'alice@presigned.test' });
  });
  afterAll(async () => {
    await t?.close();
    await lenient?.close();
  });

  it('GET redirects (307) to the storage for the URL’s remaining lifetime; HEAD and checks stay here', async () => {
    const pdf = await drawPdf([{ texts: [{ text: 'presigned', x: 72, y: 72 }] }]);
    const { json } = await rest(t.url, alice.apiKey, 'POST', '/templates/pdf', {
      name: 'Presigned',
      documents: [{ name: 'Contract "A"', file: base64(pdf) }],
    });
    const url = json.documents[0].url as string;
    expect(url.startsWith(`${t.url}/file/`)).toBe(true);

    const redirect = await fetch(`${url}?disposition=attachment`, { redirect: 'manual' });
    expect(redirect.status).toBe(307);
    const location = new URL(redirect.headers.get('location')!);
    expect(location.origin).toBe(lenient.endpoint);
    expect(location.pathname).toMatch(new RegExp(`^/${TEST_BUCKET}/presigned/sha256/`));
    const lifetime = Number(location.searchParams.get('X-Amz-Expires'));
    expect(lifetime).toBeGreaterThan(40 * 60 - 10);
    expect(lifetime).toBeLessThanOrEqual(40 * 60);

    const followed = await fetch(`${url}?disposition=attachment`);
    expect(followed.status).toBe(200);
    // The same object; its signature differs when the second request is a second later (X-Amz-Expires).
    const followedUrl = new URL(followed.url);
    expect(followedUrl.origin + followedUrl.pathname).toBe(location.origin + location.pathname);
    expect(followed.headers.get('content-type')).toBe('application/pdf');
    expect(followed.headers.get('content-disposition')).toBe(
      `attachment; filename="Contract _A_.pdf"; filename*=UTF-8''Contract%20%22A%22.pdf`,
    );
    expect(followed.headers.get('cache-control')).toMatch(/^private, max-age=\d+, immutable$/);
    expect(Buffer.from(await followed.arrayBuffer()).equals(Buffer.from(pdf))).toBe(true);
    const ranged = await fetch(url, { headers: { range: 'bytes=0-4' } });
    expect(ranged.status).toBe(206);
    expect(await ranged.text()).toBe('%PDF-');

    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(pdf.byteLength));
    // Expired tokens are refused by Signet before any redirect.
    const expired = t.app.files.signer.url(
      {
        uuid: (t.app.files.signer.verify(new URL(url).pathname.split('/')[2]!) as { uuid: string }).uuid,
        filename: 'x.pdf',
      },
      { now: Date.now() - 41 * 60_000 },
    );
    expect((await fetch(expired, { redirect: 'manual' })).status).toBe(403);
  });
});

describe('start-up', () => {
  it('refuses to start on a missing bucket, naming it', async () => {
    const database = await createTestDatabase({ migrate: false });
    const dataDir = fs.mkdtempSync(path.join(tmp, 'data-'));
    const env = {
      ...testServiceEnv({ databaseUrl: database.url, dataDir, port: await freePort() }),
      ...s3.env({ bucket: 'missing-bucket' }),
    };
    try {
      await expect(startService(env, 60_000)).rejects.toThrow(
        /service exited with 1:[\s\S]*Signet failed to start: S3 bucket "missing-bucket" at .* does not exist/,
      );
    } finally {
      await database.drop();
    }
  });
});

function pdfsig(file: string): string {
  try {
    return execFileSync('pdfsig', [file]).toString();
  } catch (error) {
    return String((error as { stdout?: Buffer }).stdout ?? error);
  }
}
