/**
 * POST /templates/html and /templates/docx through the real local renderer (Chromium and
 * LibreOffice from Debian), text tags in DOCX (tables, several pages, several roles), HTML field
 * tags, and the 503 when no renderer is there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';

let t: TestApp;
let alice: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@render.test' });
});
afterAll(async () => {
  await t?.close();
});

const api = (app: TestApp, method: string, path: string, key: string, body?: unknown) =>
  rest(app.url, key, method, path, body);

async function storedPages(attachmentUuid: string) {
  const doc = await t.db.templateDocument.findUniqueOrThrow({
    where: { uuid: attachmentUuid },
    include: { file: true },
  });
  return doc.file.pages as { width: number; height: number }[];
}

describe('POST /templates/html', () => {
  it('renders HTML with field tags into a template whose areas are the elements’ boxes', async () => {
    const html = `
      <p style="font: 14px sans-serif">Industry: <text-field name="Industry" role="First Party" required="false"
        style="width: 160px; height: 20px; display: inline-block"></text-field></p>
      <p style="margin-top: 300px">Sign: <signature-field name="Signature" role="Client"
        style="width: 200px; height: 60px; display: inline-block"></signature-field></p>`;
    const { status, json } = await api(t, 'POST', '/templates/html', alice.apiKey, {
      html,
      html_header: '<div style="font-size: 10px">ACME header</div>',
      html_footer: '<div style="font-size: 10px">ACME footer</div>',
      name: 'HTML agreement',
      size: 'A4',
      folder_name: 'HTML',
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('get', '/templates/{id}', json)).toEqual([]);
    expect(json).toMatchObject({ name: 'HTML agreement', folder_name: 'HTML' });
    expect(json.submitters.map((s: { name: string }) => s.name)).toEqual(['First Party', 'Client']);
    const [industry, signature] = json.fields;
    expect(industry).toMatchObject({ name: 'Industry', type: 'text', required: false });
    expect(signature).toMatchObject({ name: 'Signature', type: 'signature', submitter_uuid: json.submitters[1].uuid });
    const pages = await storedPages(json.documents[0].uuid);
    // A4 in points (Chromium rounds page sizes to its pixel grid: within 1.5 pt).
    expect(Math.abs(pages[0]!.width - 595.28)).toBeLessThan(1.5);
    expect(Math.abs(pages[0]!.height - 841.89)).toBeLessThan(1.5);
    // 160 × 20 CSS px = 120 × 15 points.
    expect(industry.areas[0].w * pages[0]!.width).toBeCloseTo(120, 0);
    expect(industry.areas[0].h * pages[0]!.height).toBeCloseTo(15, 0);
    expect(signature.areas[0].y).toBeGreaterThan(industry.areas[0].y);
  });

  it('takes several documents and names the template with a uuid when no name is given', async () => {
    const { status, json } = await api(t, 'POST', '/templates/html', alice.apiKey, {
      documents: [
        { name: 'Part 1', html: '<p>One <date-field name="Date" style="width: 100px; height: 20px"></date-field></p>' },
        {
          name: 'Part 2',
          html:
            '<p>Two <checkbox-field name="Agree" style="width: 20px; height: 20px"></checkbox-field> ' +
            '<datenow-field name="Today"></datenow-field></p>',
        },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.name).toMatch(/^[0-9a-f-]{36}$/);
    expect(json.schema.map((s: { name: string }) => s.name)).toEqual(['Part 1', 'Part 2']);
    expect(json.fields.map((f: { type: string }) => f.type)).toEqual(['date', 'checkbox', 'date']);
    // <datenow-field>: a readonly date filled with the signing date.
    expect(json.fields[2]).toMatchObject({ name: 'Today', readonly: true, default_value: '{{date}}' });
    expect(json.fields[1].areas[0].attachment_uuid).toBe(json.documents[1].uuid);
  });

  it('refuses an unknown field tag and a bad size with 422', async () => {
    const unknown = await api(t, 'POST', '/templates/html', alice.apiKey, {
      html: '<hologram-field name="x"></hologram-field>',
    });
    expect(unknown.status).toBe(422);
    expect(unknown.json.error).toMatch(/hologram/);
    const size = await api(t, 'POST', '/templates/html', alice.apiKey, { html: '<p>x</p>', size: 'Napkin' });
    expect(size.status).toBe(422);
    expect((await api(t, 'POST', '/templates/html', alice.apiKey, {})).status).toBe(422);
  });
});

describe('POST /templates/docx', () => {
  it('converts a DOCX and takes its text tags, in table cells and over several pages', async () => {
    const docx = makeDocx([
      { paragraph: 'Agreement between the parties.' },
      {
        table: [
          ['Buyer', '{{Buyer Name;role=Buyer}}'],
          ['Seller', '{{Seller Name;role=Seller}}'],
        ],
      },
      { pageBreak: true },
      { paragraph: 'Signed: {{Buyer Sign;type=signature;role=Buyer}}' },
    ]);
    const { status, json } = await api(t, 'POST', '/templates/docx', alice.apiKey, {
      name: 'Sale',
      documents: [{ name: 'sale', file: docx.toString('base64') }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.submitters.map((s: { name: string }) => s.name)).toEqual(['Buyer', 'Seller']);
    expect(json.fields.map((f: { name: string; type: string }) => [f.name, f.type])).toEqual([
      ['Buyer Name', 'text'],
      ['Seller Name', 'text'],
      ['Buyer Sign', 'signature'],
    ]);
    expect(json.fields.map((f: { areas: { page: number }[] }) => f.areas[0]!.page)).toEqual([0, 0, 1]);
    // The stored PDF no longer carries the tags.
    const pdf = Buffer.from(await (await fetch(json.documents[0].url)).arrayBuffer());
    const { execFileSync } = await import('node:child_process');
    const text = execFileSync('pdftotext', ['-', '-'], { input: pdf }).toString();
    expect(text).toContain('Agreement between the parties.');
    expect(text).not.toContain('{{');
  });

  it('refuses a file that is not a DOCX', async () => {
    const { status, json } = await api(t, 'POST', '/templates/docx', alice.apiKey, {
      documents: [{ name: 'x', file: Buffer.from('%PDF-1.7 nope').toString('base64') }],
    });
    expect(status).toBe(422);
    expect(json.error).toMatch(/not a DOCX/);
  });
});

describe('without a renderer', () => {
  it('answers 503 naming what is missing', async () => {
    const bare = await startTestApp({
      env: { CHROMIUM_PATH: '/nonexistent/chromium', SOFFICE_PATH: '/nonexistent/soffice' },
    });
    try {
      const account = await bare.createAccount({ email: 'nobody@render.test' });
      const html = await api(bare, 'POST', '/templates/html', account.apiKey, { html: '<p>x</p>' });
      expect(html.status).toBe(503);
      expect(html.json.error).toMatch(/Chromium/);
      const docx = await api(bare, 'POST', '/templates/docx', account.apiKey, {
        documents: [{ name: 'x', file: makeDocx([{ paragraph: 'x' }]).toString('base64') }],
      });
      expect(docx.status).toBe(503);
      expect(docx.json.error).toMatch(/LibreOffice/);
    } finally {
      await bare.close();
    }
  });
});
