/**
 * Typed signatures (issue 15): a signature or initials given as text is rendered to a PNG in the
 * signing page's script font (src/documents/typed-signature.ts) and stored like an uploaded
 * signature, as DocuSeal does for short text (lib/submitters/normalize_values.rb
 * `find_or_create_blob_from_text`). Against a real service:
 * - the renderer: a transparent PNG trimmed to the ink, the same bytes for the same text, clean
 *   text, limits;
 * - REST: create and PUT /submitters/{id} (with `completed: true`) answer `values` with the image
 *   URL (serving a PNG that decodes) and then the typed text, as the interface spec's `values`
 *   allows; the completed PDF draws the image and not the text (pdfimages, pdftotext); the audit
 *   log shows the image and "Typed: <text>"; the same text twice is one stored file; bad text and
 *   too many renders are 422s that write nothing;
 * - the signing form's upload route with `typed_text`, and the page's Type tab in Chromium;
 * - GraphQL: createSubmissions, updateSubmitter and `submitter { values }` answer the same values.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as mupdf from 'mupdf';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { renderTypedSignature, typedSignatureText } from '../src/documents/typed-signature.ts';
import { AppError } from '../src/errors.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { acceptConsent, expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

// Completion jobs and a browser share two cores with other suites.
vi.setConfig({ testTimeout: 120_000 });

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-typed-'));

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const area = (y: number, h = 40) => [{ x: 72, y, w: 200, h, page: 1 }];
/** A file URL's last path segment (signed URLs differ in their token; the name does not). */
const urlName = (url: string) => new URL(url).pathname.split('/').pop();
/** The stored file behind a signed file URL, by the uuid the token carries. */
async function storedFileOf(url: string) {
  const token = new URL(url).pathname.split('/')[2]!;
  const { id } = JSON.parse(Buffer.from(token.split('--')[0]!, 'base64url').toString()) as { id: string };
  return t.db.storedFile.findUniqueOrThrow({ where: { uuid: id } });
}

/** Fetches a file URL and checks it is a PNG that decodes; returns its bytes and size. */
async function fetchPng(url: string): Promise<{ bytes: Buffer; width: number; height: number }> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^image\/png/);
  const bytes = Buffer.from(await response.arrayBuffer());
  expect(bytes.length).toBeGreaterThan(0);
  const image = new mupdf.Image(bytes);
  try {
    const pixmap = image.toPixmap();
    try {
      return { bytes, width: pixmap.getWidth(), height: pixmap.getHeight() };
    } finally {
      pixmap.destroy();
    }
  } finally {
    image.destroy();
  }
}

function download(bytes: Buffer, name: string): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, bytes);
  return file;
}
const textOf = (file: string) => execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
/** pdfimages -list: "type WxH" of every image and soft mask. */
const imagesOf = (file: string) =>
  execFileSync('pdfimages', ['-list', file])
    .toString()
    .trim()
    .split('\n')
    .slice(2)
    .map((line) => line.trim().split(/\s+/))
    .map((cells) => `${cells[2]} ${cells[3]}x${cells[4]}`);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Typed Ltd', email: 'alice@typed.test' });
  const created = await api('POST', '/templates/pdf', {
    name: 'Typed',
    documents: [{ name: 'typed', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Full Name', role: 'Signer', areas: area(72, 24) },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: area(200) },
      { name: 'Second Signature', type: 'signature', role: 'Signer', required: false, areas: area(260) },
      { name: 'Initials', type: 'initials', role: 'Signer', required: false, areas: area(320) },
    ],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  templateId = created.json.id;
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('renderTypedSignature', () => {
  it('draws the text in the script font on a transparent PNG trimmed to the ink, the same bytes again', async () => {
    const image = await renderTypedSignature('  Ada \n\t Lovelace ');
    expect(image.text).toBe('Ada Lovelace');
    expect(Buffer.from(image.png).subarray(1, 4).toString()).toBe('PNG');
    const decoded = new mupdf.Image(image.png).toPixmap();
    expect([decoded.getWidth(), decoded.getHeight()]).toEqual([image.width, image.height]);
    // One line: much wider than tall, about the font's size (96 px) high.
    expect(image.width).toBeGreaterThan(3 * image.height);
    expect(image.height).toBeGreaterThan(60);
    expect(image.height).toBeLessThan(200);
    // Transparent around the ink, and ink in the page's colour (#14245c).
    const pixels = decoded.getPixels();
    const n = decoded.getNumberOfComponents();
    let clear = 0;
    let ink = 0;
    for (let i = 0; i < pixels.length; i += n) {
      if (pixels[i + 3] === 0) clear += 1;
      if (pixels[i + 3] === 255) {
        expect([pixels[i], pixels[i + 1], pixels[i + 2]]).toEqual([0x14, 0x24, 0x5c]);
        ink += 1;
      }
    }
    expect(clear).toBeGreaterThan(ink);
    expect(ink).toBeGreaterThan(1000);
    // Trimmed: the ink starts after a margin of about 10 px, not further in.
    const alphaAt = (x: number, y: number) => pixels[(y * image.width + x) * n + 3]!;
    const inked = (x: number) => Array.from({ length: image.height }, (_, y) => alphaAt(x, y)).some((a) => a > 0);
    expect(inked(5)).toBe(false);
    expect(Array.from({ length: 22 }, (_, i) => 8 + i).some(inked)).toBe(true);
    decoded.destroy();
    expect(Buffer.from((await renderTypedSignature('Ada Lovelace')).png).equals(Buffer.from(image.png))).toBe(true);
  });

  it('draws letters the script font lacks (Greek) in the fallback face; refuses blank or long text', async () => {
    const greek = await renderTypedSignature('Ελένη Παπαδοπούλου');
    expect(greek.width).toBeGreaterThan(greek.height * 3);
    expect(typedSignatureText('\u200bA\u0000 B ')).toBe('A B');
    await expect(renderTypedSignature(' \n ')).rejects.toMatchObject({
      code: 'VALIDATION',
      message: 'signature is empty',
    });
    await expect(renderTypedSignature('x'.repeat(60))).rejects.toBeInstanceOf(AppError);
    await expect(renderTypedSignature('x'.repeat(60))).rejects.toThrow(
      'typed signature is too long (maximum is 59 characters).',
    );
    expect((await renderTypedSignature('x'.repeat(59))).width).toBeGreaterThan(0);
  });
});

describe('REST', () => {
  it('POST /submissions: a typed signature is an image URL (a PNG) then its text; initials too', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'ada@typed.test', values: { Signature: 'Ada Lovelace', Initials: 'AL' } }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('post', '/submissions', json)).toEqual([]);
    const [signer] = json;
    expect(signer.values).toEqual([
      { field: 'Signature', value: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/file\/.+\/signature\.png$/) },
      { field: 'Signature', value: 'Ada Lovelace' },
      { field: 'Initials', value: expect.stringMatching(/\/initials\.png$/) },
      { field: 'Initials', value: 'AL' },
    ]);
    // The URL serves the PNG the renderer makes for that text.
    const png = await fetchPng(signer.values[0].value);
    expect(png.bytes.equals(Buffer.from((await renderTypedSignature('Ada Lovelace')).png))).toBe(true);
    expect(png.width).toBeGreaterThan(png.height);
    await fetchPng(signer.values[2].value);
    const stored = await storedFileOf(signer.values[0].value);
    expect(stored).toMatchObject({ accountId: alice.accountId, filename: 'signature.png', contentType: 'image/png' });
    expect(stored.metadata).toEqual({ typed_text: 'Ada Lovelace', type: 'signature' });

    // GET /submitters/{id} and GET /submissions/{id} say the same.
    const one = await api('GET', `/submitters/${signer.id}`);
    expect(openApiErrors('get', '/submitters/{id}', one.json)).toEqual([]);
    expect(one.json.values.map((v: { value: string }) => v.value.replace(/\/file\/[^/]+\//, '/file/…/'))).toEqual([
      expect.stringMatching(/\/file\/…\/signature\.png$/),
      'Ada Lovelace',
      expect.stringMatching(/\/file\/…\/initials\.png$/),
      'AL',
    ]);
    const submission = await api('GET', `/submissions/${signer.submission_id}`);
    expect(openApiErrors('get', '/submissions/{id}', submission.json)).toEqual([]);
    expect(submission.json.submitters[0].values[1]).toEqual({ field: 'Signature', value: 'Ada Lovelace' });
  });

  it('renders and stores the same text once per request: both fields name one file', async () => {
    const before = await t.db.storedFile.count();
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        { role: 'Signer', email: 'twice@typed.test', values: { Signature: 'Twice', 'Second Signature': 'Twice' } },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(await t.db.storedFile.count()).toBe(before + 1);
    const values = json[0].values as { field: string; value: string }[];
    expect(values.map((v) => v.field)).toEqual(['Signature', 'Signature', 'Second Signature', 'Second Signature']);
    expect((await storedFileOf(values[0]!.value)).uuid).toBe((await storedFileOf(values[2]!.value)).uuid);
  });

  it(
    'PUT /submitters/{id} with completed: true: values show the URL and the text, the PDF draws the image, ' +
      'the audit log shows it and the typed text',
    async () => {
      const created = await api('POST', '/submissions', {
        template_id: templateId,
        send_email: false,
        submitters: [{ role: 'Signer', email: 'grace@typed.test' }],
      });
      const signer = created.json[0];
      const put = await api('PUT', `/submitters/${signer.id}`, {
        completed: true,
        values: { 'Full Name': 'Grace Hopper', Signature: 'Grace Hopper' },
      });
      expect(put.status, JSON.stringify(put.json)).toBe(200);
      // (Not checked against the OpenAPI schema: empty fields of a completed party are null, as DocuSeal's.)
      expect(put.json.values).toEqual([
        { field: 'Full Name', value: 'Grace Hopper' },
        { field: 'Signature', value: expect.stringMatching(/\/signature\.png$/) },
        { field: 'Signature', value: 'Grace Hopper' },
        { field: 'Second Signature', value: null },
        { field: 'Initials', value: null },
      ]);
      const png = await fetchPng(put.json.values[1].value);

      await t.jobs.waitForIdle({ timeoutMs: 60_000 });
      const done = (await api('GET', `/submissions/${signer.submission_id}`)).json;
      expect(done.status).toBe('completed');
      const pdf = download(Buffer.from(await (await fetch(done.documents[0].url)).arrayBuffer()), 'grace.pdf');
      // The signature is the image (with its transparency); the name is text once, from Full Name.
      expect(imagesOf(pdf)).toEqual([`image ${png.width}x${png.height}`, `smask ${png.width}x${png.height}`]);
      expect(textOf(pdf).match(/Grace Hopper/g)).toHaveLength(1);
      const log = download(Buffer.from(await (await fetch(done.audit_log_url)).arrayBuffer()), 'grace-audit.pdf');
      expect(textOf(log)).toContain('SIGNATURE Typed: Grace Hopper');
      expect(imagesOf(log)).toContain(`image ${png.width}x${png.height}`);
    },
  );

  it('refuses blank text and more than 100 different typed signatures in one request, writing nothing', async () => {
    const blank = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Signer', email: 'blank@typed.test', values: { Signature: ' \n ' } }],
    });
    expect(blank).toEqual({ status: 422, json: { error: 'Invalid signature value' } });

    const many = await api('POST', '/templates/pdf', {
      name: 'Many signatures',
      documents: [{ name: 'many', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: Array.from({ length: 101 }, (_, i) => ({
        name: `S${i + 1}`,
        type: 'signature',
        role: 'Signer',
        areas: [{ x: 10 + (i % 10) * 58, y: 20 + Math.floor(i / 10) * 70, w: 50, h: 20, page: 1 }],
      })),
    });
    expect(many.status, JSON.stringify(many.json)).toBe(200);
    const files = await t.db.storedFile.count();
    const submissions = await t.db.submission.count();
    const values = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`S${i + 1}`, `Name ${i + 1}`]));
    const refused = await api('POST', '/submissions', {
      template_id: many.json.id,
      submitters: [{ role: 'Signer', email: 'many@typed.test', values }],
    });
    expect(refused).toEqual({
      status: 422,
      json: {
        error: 'values.S101 in `submitters[0]`: too many typed signatures in one request (maximum is 100).',
      },
    });
    expect(await t.db.storedFile.count()).toBe(files);
    expect(await t.db.submission.count()).toBe(submissions);
    // The same text in every field is rendered once.
    const same = await api('POST', '/submissions', {
      template_id: many.json.id,
      send_email: false,
      submitters: [
        {
          role: 'Signer',
          email: 'same@typed.test',
          values: Object.fromEntries(Object.keys(values).map((k) => [k, 'Same'])),
        },
      ],
    });
    expect(same.status, JSON.stringify(same.json)).toBe(200);
    expect(await t.db.storedFile.count()).toBe(files + 1);
  });
});

describe('POST /api/attachments with typed_text', () => {
  async function upload(fields: Record<string, string>): Promise<{ status: number; json: any }> {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const response = await fetch(`${t.url}/api/attachments`, { method: 'POST', body: form });
    return { status: response.status, json: await response.json() };
  }

  it('renders the text for the signer, keeps it, and refuses other types, blank and long text', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'upload@typed.test' }],
    });
    const signer = created.json[0];
    const ok = await upload({ submitter_slug: signer.slug, type: 'initials', typed_text: ' K  J ' });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.json).toMatchObject({ filename: 'initials.png', content_type: 'image/png' });
    const png = await fetchPng(ok.json.url);
    expect(png.bytes.equals(Buffer.from((await renderTypedSignature('K J')).png))).toBe(true);
    const stored = await t.db.storedFile.findUniqueOrThrow({ where: { uuid: ok.json.uuid } });
    expect(stored.submitterId).toBe(signer.id);
    expect(stored.metadata).toEqual({ type: 'initials', typed_text: 'K J' });

    expect(await upload({ submitter_slug: signer.slug, type: 'image', typed_text: 'x' })).toEqual({
      status: 422,
      json: { error: 'typed_text is only for type signature or initials' },
    });
    expect(await upload({ submitter_slug: signer.slug, type: 'signature', typed_text: '  ' })).toEqual({
      status: 422,
      json: { error: 'signature is empty' },
    });
    expect(await upload({ submitter_slug: signer.slug, type: 'signature', typed_text: 'x'.repeat(60) })).toEqual({
      status: 422,
      json: { error: 'typed signature is too long (maximum is 59 characters).' },
    });
    expect((await upload({ submitter_slug: 'nope', type: 'signature', typed_text: 'x' })).status).toBe(404);
  });
});

describe('GraphQL', () => {
  it('createSubmissions, updateSubmitter and submitter { values } answer what REST answers', async () => {
    const created = await graphql(
      t.url,
      /* GraphQL */ `
        mutation ($input: CreateSubmissionsInput!) {
          createSubmissions(input: $input) { submitters { id values } }
        }
      `,
      {
        key: alice.apiKey,
        variables: {
          input: {
            templateId,
            sendEmail: false,
            submitters: [{ role: 'Signer', email: 'gql@typed.test', values: { Signature: 'Ada Lovelace' } }],
          },
        },
      },
    );
    expect(created.body.errors).toBeUndefined();
    const submitter = created.body.data.createSubmissions.submitters[0];
    expect(submitter.values).toEqual([
      { field: 'Signature', value: expect.stringMatching(/\/signature\.png$/) },
      { field: 'Signature', value: 'Ada Lovelace' },
    ]);
    await fetchPng(submitter.values[0].value);

    const updated = await graphql(
      t.url,
      /* GraphQL */ `
        mutation ($input: UpdateSubmitterInput!) {
          updateSubmitter(input: $input) { submitter { values } }
        }
      `,
      { key: alice.apiKey, variables: { input: { id: submitter.id, values: { Initials: 'A.L.' } } } },
    );
    expect(updated.body.errors).toBeUndefined();
    const values = updated.body.data.updateSubmitter.submitter.values as { field: string; value: string }[];
    expect(values.map((v) => [v.field, v.value.startsWith('http') ? urlName(v.value) : v.value])).toEqual([
      ['Signature', 'signature.png'],
      ['Signature', 'Ada Lovelace'],
      ['Initials', 'initials.png'],
      ['Initials', 'A.L.'],
    ]);
    const read = await graphql(t.url, `{ submitter(id: ${submitter.id}) { values } }`, { key: alice.apiKey });
    const viaRest = await api('GET', `/submitters/${submitter.id}`);
    // The same entries; a URL compared by the file it names (its token carries an expiry time).
    const comparable = (list: { field: string; value: string }[]) =>
      Promise.all(
        list.map(async (v) => [v.field, v.value.startsWith('http') ? (await storedFileOf(v.value)).uuid : v.value]),
      );
    expect(await comparable(read.body.data.submitter.values)).toEqual(await comparable(viaRest.json.values));
  });
});

describe('the signing page (Chromium)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('the Type tab sends the text; the field shows the server’s image; values keep both', async () => {
    const created = await api('POST', '/templates/pdf', {
      name: 'Type it',
      documents: [{ name: 'type-it', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [
        {
          name: 'Signature',
          type: 'signature',
          role: 'Signer',
          preferences: { format: 'typed' },
          areas: [{ x: 72, y: 200, w: 200, h: 50, page: 1 }],
        },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const submission = await api('POST', '/submissions', {
      template_id: created.json.id,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'page@typed.test', name: 'Ada Lovelace' }],
    });
    const signer = submission.json[0];
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      await page.goto(signer.embed_src);
      await page.locator('.action-bar').waitFor();
      await page.getByRole('button', { name: 'Signature (required)' }).click();
      await acceptConsent(page);
      const input = page.getByLabel('Type your name');
      await expectInPage(input).toHaveValue('Ada Lovelace');
      await expectInPage(input).toHaveAttribute('maxlength', '59');
      await input.fill('Ada King Lovelace');
      const uploaded = page.waitForResponse((r) => r.url().endsWith('/api/attachments'));
      await page.getByRole('button', { name: 'Apply signature' }).click();
      const body = (await (await uploaded).json()) as { uuid: string; url: string };
      const image = page.locator('.field[data-field-name="Signature"] img');
      await expectInPage(image).toBeVisible();
      // The image shown is the server's rendering of the text (decoded by the browser, not empty).
      await expectInPage(image).toHaveJSProperty('complete', true);
      expect(await image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(100);
      const png = await fetchPng(body.url);
      expect(png.bytes.equals(Buffer.from((await renderTypedSignature('Ada King Lovelace')).png))).toBe(true);

      await page.locator('#complete-button').click();
      await page.getByText('Thank you! You have completed the form.').waitFor();
      const one = await api('GET', `/submitters/${signer.id}`);
      expect(one.json.values).toEqual([
        { field: 'Signature', value: expect.stringMatching(/\/signature\.png$/) },
        { field: 'Signature', value: 'Ada King Lovelace' },
      ]);
      const stored = await t.db.storedFile.findUniqueOrThrow({ where: { uuid: body.uuid } });
      expect(stored.submitterId).toBe(signer.id);
      expect(stored.metadata).toMatchObject({ typed_text: 'Ada King Lovelace' });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
