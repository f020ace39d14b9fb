/**
 * One-off submissions (OpenAPI POST /submissions/pdf, /submissions/docx, /submissions/html;
 * GraphQL createSubmissionFromPdf|Docx|Html): a template from the documents (text tags, HTML
 * field tags, `fields`) and a submission of it in one call, answered in DocuSeal's shape
 * (checked against the OpenAPI schema of each route); the template is not listed among the
 * account's; the signing link works; a refusal, even one found only once the documents are read,
 * stores nothing.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@one-off.test' });
});
afterAll(async () => {
  await t?.close();
});

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

/** A Letter page with a buyer's name tag and a seller's signature tag in its text layer. */
const taggedPdf = () =>
  drawPdf([
    {
      texts: [
        { text: 'Sale agreement between the parties.', x: 72, y: 72 },
        { text: '{{Buyer Name;role=Buyer}}', x: 72, y: 120 },
        { text: '{{Seller Sign;type=signature;role=Seller}}', x: 72, y: 300 },
      ],
    },
  ]);

/**
 * The OpenAPI schema's errors for a one-off answer. Its schema types `expire_at` as a string, yet
 * DocuSeal's own example answers `"expire_at": null` when none was given, as Signet does: null
 * is checked here, and the rest against the schema.
 */
function oneOffSchemaErrors(path: string, json: { expire_at: unknown }): string[] {
  if (json.expire_at === null) return openApiErrors('post', path, { ...json, expire_at: '' });
  return openApiErrors('post', path, json);
}

/** What the account has stored: a refused request must leave these as they were. */
async function storedCounts() {
  await t.outboxRelayed();
  const where = { accountId: alice.accountId };
  return {
    templates: await t.db.template.count({ where }),
    documents: await t.db.templateDocument.count({ where: { template: where } }),
    files: await t.db.storedFile.count({ where }),
    submissions: await t.db.submission.count({ where }),
    submitters: await t.db.submitter.count({ where }),
    outbox: await t.db.outboxJob.count(),
  };
}

/** The text layer of a template document's stored PDF. */
async function storedText(attachmentUuid: string): Promise<string> {
  const doc = await t.db.templateDocument.findUniqueOrThrow({
    where: { uuid: attachmentUuid },
    include: { file: true },
  });
  const bytes = await t.app.files.storage.read(doc.file.storageKey);
  return execFileSync('pdftotext', ['-', '-'], { input: bytes }).toString();
}

describe('POST /submissions/pdf', () => {
  it('makes a template from the tagged PDF and a submission of it, answered as the OpenAPI schema says', async () => {
    const { status, json } = await api('POST', '/submissions/pdf', {
      name: 'Sale 42',
      order: 'preserved',
      expire_at: '2099-09-01 12:00:00 UTC',
      message: { subject: 'Please sign', body: 'Sign here: {{submitter.link}}' },
      documents: [
        {
          name: 'sale.pdf',
          file: base64(await taggedPdf()),
          fields: [
            { name: 'Price', type: 'number', role: 'Buyer', areas: [{ x: 72, y: 200, w: 100, h: 20, page: 1 }] },
          ],
        },
      ],
      submitters: [
        { role: 'Buyer', email: 'buyer@one-off.test', values: { 'Buyer Name': 'Bea Buyer' } },
        { role: 'Seller', email: 'seller@one-off.test', name: 'Sam Seller', external_id: 'seller-1' },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('post', '/submissions/pdf', json)).toEqual([]);
    expect(json).toMatchObject({
      name: 'Sale 42',
      source: 'api',
      submitters_order: 'preserved',
      status: 'pending',
      expire_at: '2099-09-01T12:00:00.000Z',
      documents: [],
    });
    expect(json.schema).toEqual([{ attachment_uuid: expect.any(String), name: 'sale' }]);
    // The text tags became fields (with the request's own field), on the document, for their roles.
    expect(json.fields.map((f: { name: string; type: string }) => [f.name, f.type])).toEqual([
      ['Buyer Name', 'text'],
      ['Seller Sign', 'signature'],
      ['Price', 'number'],
    ]);
    for (const field of json.fields) expect(field.areas[0].attachment_uuid).toBe(json.schema[0].attachment_uuid);
    const [buyer, seller] = json.submitters;
    expect(buyer).toMatchObject({ role: 'Buyer', email: 'buyer@one-off.test', status: 'sent' });
    expect(buyer.values).toEqual([{ field: 'Buyer Name', value: 'Bea Buyer' }]);
    expect(seller).toMatchObject({ role: 'Seller', name: 'Sam Seller', external_id: 'seller-1', status: 'awaiting' });
    expect(seller.sent_at).toBeNull();
    expect(buyer.embed_src).toBe(`${t.config.appUrl}/s/${buyer.slug}`);

    // The template: stored as a one-off (not among the account's templates), its PDF without the tags.
    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: json.id }, include: { template: true } });
    expect(submission.template).toMatchObject({ source: 'one_off', name: 'Sale 42', sharedLink: false });
    const text = await storedText(json.schema[0].attachment_uuid);
    expect(text).toContain('Sale agreement between the parties.');
    expect(text).not.toContain('{{');
    expect(await t.db.templateEvent.count({ where: { templateId: submission.templateId } })).toBe(0);
    const listed = await api('GET', '/templates');
    expect(listed.json.data.map((x: { id: number }) => x.id)).not.toContain(submission.templateId);

    // The submission reads back as any other, and the request went to the first party only.
    const read = await api('GET', `/submissions/${json.id}`);
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ id: json.id, name: 'Sale 42', status: 'pending' });
    await t.app.jobs.waitForIdle();
    const emails = await t.db.emailMessage.findMany({ where: { submissionId: json.id } });
    expect(emails.map((e) => e.to)).toEqual([['buyer@one-off.test']]);
    expect(emails[0]!.subject).toBe('Please sign');

    // The signing link works: the page, and the form it loads (the buyer's fields on the stored document).
    const form = await fetch(`${t.url}/s/${buyer.slug}`);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-type')).toMatch(/^text\/html/);
    const signing = await graphql(
      t.url,
      'query ($slug: String!) { signingForm(slug: $slug) { state documents { uuid url } fields { name own } } }',
      { variables: { slug: buyer.slug } },
    );
    expect(signing.body.data.signingForm).toMatchObject({
      state: 'OPEN',
      documents: [{ uuid: json.schema[0].attachment_uuid }],
      fields: [
        { name: 'Buyer Name', own: true },
        { name: 'Price', own: true },
      ],
    });
    const pdf = Buffer.from(await (await fetch(signing.body.data.signingForm.documents[0].url)).arrayBuffer());
    expect(execFileSync('pdftotext', ['-', '-'], { input: pdf }).toString()).toContain('Sale agreement');
  });

  it('names the submission after its first document by default; random order sends to all at once', async () => {
    const { status, json } = await api('POST', '/submissions/pdf', {
      order: 'random',
      documents: [{ name: 'Lease', file: base64(await taggedPdf()) }],
      submitters: [
        { role: 'Buyer', email: 'b2@one-off.test' },
        { role: 'Seller', email: 's2@one-off.test' },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(oneOffSchemaErrors('/submissions/pdf', json)).toEqual([]);
    expect(json.expire_at).toBeNull();
    expect(json).toMatchObject({ name: 'Lease', submitters_order: 'random' });
    expect(json.submitters.map((s: { status: string }) => s.status)).toEqual(['sent', 'sent']);
  });

  it('refuses bad input with 422 and stores nothing, also a refusal found once the documents are read', async () => {
    const pdf = base64(await taggedPdf());
    const before = await storedCounts();
    const cases: [unknown, RegExp][] = [
      [{ documents: [{ name: 'x', file: pdf }] }, /^submitters is required/],
      [
        { documents: [{ name: 'x', file: pdf }], submitters: [{ email: 'nope' }] },
        /email is invalid in `submitters\[0\]`/,
      ],
      [{ submitters: [{ email: 'a@one-off.test' }] }, /^documents is required/],
      [
        { documents: [{ name: 'x' }], submitters: [{ email: 'a@one-off.test' }] },
        /file is required in `documents\[0\]`/,
      ],
      [
        {
          documents: [{ name: 'x', file: base64(Buffer.from('not a pdf')) }],
          submitters: [{ email: 'a@one-off.test' }],
        },
        /documents\[0\]/,
      ],
      // Read only once the template is planned: the documents have no field at all.
      [
        {
          documents: [{ name: 'x', file: base64(await drawPdf([{ texts: [{ text: 'No tags', x: 72, y: 72 }] }])) }],
          submitters: [{ email: 'a@one-off.test' }],
        },
        /^Template does not contain fields/,
      ],
      // Read only once the submission is planned on the template's fields: an unknown field with a value.
      [
        {
          documents: [{ name: 'x', file: pdf }],
          submitters: [{ role: 'Buyer', email: 'a@one-off.test', fields: [{ name: 'Nope', default_value: 'v' }] }],
        },
        /^Unknown field: Nope/,
      ],
      [
        { documents: [{ name: 'x', file: pdf }], submitters: [{ email: 'a@one-off.test' }], order: 'sideways' },
        /order/,
      ],
    ];
    for (const [body, message] of cases) {
      const { status, json } = await api('POST', '/submissions/pdf', body);
      expect(status, JSON.stringify(body).slice(0, 200)).toBe(422);
      expect(json.error).toMatch(message);
    }
    expect(await storedCounts()).toEqual(before);
  });
});

describe('template_ids', () => {
  it("adds the templates' documents, roles (merged by name) and fields after the given documents", async () => {
    const made = await api('POST', '/templates/pdf', {
      name: 'Annex',
      documents: [{ name: 'annex', file: base64(await taggedPdf()) }],
      fields: [{ name: 'Witness', role: 'Witness', areas: [{ x: 72, y: 400, w: 100, h: 20, page: 1 }] }],
    });
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    const { status, json } = await api('POST', '/submissions/pdf', {
      template_ids: [made.json.id],
      documents: [
        {
          name: 'main',
          file: base64(
            await drawPdf([{ texts: [{ text: '{{Buyer Initials;type=initials;role=buyer}}', x: 72, y: 72 }] }]),
          ),
        },
      ],
      submitters: [
        { role: 'Buyer', email: 'tb@one-off.test' },
        { role: 'Seller', email: 'ts@one-off.test' },
        { role: 'Witness', email: 'tw@one-off.test' },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(oneOffSchemaErrors('/submissions/pdf', json)).toEqual([]);
    expect(json.schema.map((d: { name: string }) => d.name)).toEqual(['main', 'annex']);
    const roles = await t.db.submission.findUniqueOrThrow({ where: { id: json.id }, include: { template: true } });
    // "buyer" of the tag and "Buyer" of the template are one role.
    expect((roles.template.submitters as { name: string }[]).map((r) => r.name)).toEqual([
      'buyer',
      'Seller',
      'Witness',
    ]);
    expect(json.submitters.map((s: { role: string }) => s.role)).toEqual(['buyer', 'Seller', 'Witness']);
    const byName = new Map(json.fields.map((f: { name: string }) => [f.name, f]));
    const [main, annex] = json.schema.map((d: { attachment_uuid: string }) => d.attachment_uuid);
    expect(byName.get('Buyer Initials')).toMatchObject({ areas: [{ attachment_uuid: main }] });
    expect(byName.get('Buyer Name')).toMatchObject({ areas: [{ attachment_uuid: annex }] });
    expect(byName.get('Witness')).toMatchObject({ areas: [{ attachment_uuid: annex }] });
    // The template used is unchanged; its file is shared, not copied.
    const annexDoc = await t.db.templateDocument.findUniqueOrThrow({ where: { uuid: annex } });
    const original = await t.db.templateDocument.findFirstOrThrow({ where: { templateId: made.json.id } });
    expect(annexDoc.fileId).toBe(original.fileId);
    expect((await api('GET', `/submissions/${json.id}`)).status).toBe(200);
  });

  it("refuses another account's template (403) and an unknown one (404), storing nothing", async () => {
    const bob = await t.createAccount({ email: 'bob@one-off.test' });
    const bobs = await rest(t.url, bob.apiKey, 'POST', '/templates/pdf', {
      documents: [{ name: 'b', file: base64(await taggedPdf()) }],
    });
    const before = await storedCounts();
    const file = base64(await taggedPdf());
    const body = (id: number) => ({
      template_ids: [id],
      documents: [{ name: 'x', file }],
      submitters: [{ email: 'a@one-off.test' }],
    });
    const forbidden = await api('POST', '/submissions/pdf', body(bobs.json.id));
    expect(forbidden).toEqual({ status: 403, json: { error: 'Not authorized' } });
    const unknown = await api('POST', '/submissions/pdf', body(999_999));
    expect(unknown).toEqual({ status: 404, json: { error: 'Template 999999 not found' } });
    expect(await storedCounts()).toEqual(before);
  });
});

describe('POST /submissions/docx and /submissions/html', () => {
  it('converts a DOCX and takes its text tags', async () => {
    const docx = makeDocx([
      { paragraph: 'Agreement between the parties.' },
      { paragraph: 'Client: {{Client Name;role=Client}}' },
      { pageBreak: true },
      { paragraph: 'Signed: {{Client Sign;type=signature;role=Client}}' },
    ]);
    const { status, json } = await api('POST', '/submissions/docx', {
      name: 'Docx deal',
      documents: [{ name: 'deal', file: docx.toString('base64') }],
      submitters: [{ role: 'Client', email: 'client@one-off.test' }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(oneOffSchemaErrors('/submissions/docx', json)).toEqual([]);
    expect(json.fields.map((f: { name: string; areas: { page: number }[] }) => [f.name, f.areas[0]!.page])).toEqual([
      ['Client Name', 0],
      ['Client Sign', 1],
    ]);
    const text = await storedText(json.schema[0].attachment_uuid);
    expect(text).toContain('Agreement between the parties.');
    expect(text).not.toContain('{{');
    expect((await fetch(`${t.url}/s/${json.submitters[0].slug}`)).status).toBe(200);
  });

  it('renders HTML documents, each with its own size, and takes their field tags', async () => {
    const { status, json } = await api('POST', '/submissions/html', {
      name: 'HTML deal',
      documents: [
        {
          name: 'Terms',
          size: 'A4',
          html_header: '<div style="font-size: 10px">ACME terms</div>',
          html:
            '<p>Name: <text-field name="Name" role="Signer" style="width: 160px; height: 20px; ' +
            'display: inline-block"></text-field></p>',
        },
        {
          name: 'Signature page',
          html:
            '<p>Sign: <signature-field name="Sign" role="Signer" ' +
            'style="width: 200px; height: 60px"></signature-field></p>',
        },
      ],
      submitters: [{ role: 'Signer', email: 'signer@one-off.test' }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(oneOffSchemaErrors('/submissions/html', json)).toEqual([]);
    expect(json.schema.map((d: { name: string }) => d.name)).toEqual(['Terms', 'Signature page']);
    expect(json.fields.map((f: { name: string; type: string }) => [f.name, f.type])).toEqual([
      ['Name', 'text'],
      ['Sign', 'signature'],
    ]);
    const pages = async (uuid: string) =>
      (await t.db.templateDocument.findUniqueOrThrow({ where: { uuid }, include: { file: true } })).file.pages as {
        width: number;
      }[];
    // A4 for the first document, Letter (the default) for the second.
    expect(Math.abs((await pages(json.schema[0].attachment_uuid))[0]!.width - 595.28)).toBeLessThan(1.5);
    expect(Math.abs((await pages(json.schema[1].attachment_uuid))[0]!.width - 612)).toBeLessThan(1.5);
    expect(await storedText(json.schema[0].attachment_uuid)).toContain('ACME terms');

    const before = await storedCounts();
    const missing = await api('POST', '/submissions/html', {
      documents: [{ name: 'x' }],
      submitters: [{ email: 'a@one-off.test' }],
    });
    expect(missing.status).toBe(422);
    expect(missing.json.error).toMatch(/html is required in `documents\[0\]`/);
    const empty = await api('POST', '/submissions/html', { documents: [], submitters: [{ email: 'a@one-off.test' }] });
    expect(empty).toEqual({ status: 422, json: { error: 'documents must not be empty.' } });
    expect(await storedCounts()).toEqual(before);
  });
});

describe('GraphQL createSubmissionFromPdf / Html', () => {
  const MUTATION = /* GraphQL */ `
    mutation ($input: CreateSubmissionFromFileInput!) {
      createSubmissionFromPdf(input: $input) {
        submissionIds
        submissions {
          id name source submittersOrder status
          template { id source name fields { name type } schema { name } }
          submitters { role email slug sentAt embedSrc }
        }
      }
    }
  `;

  it('creates the same as REST, not listed among the templates', async () => {
    const { status, body } = await graphql(t.url, MUTATION, {
      key: alice.apiKey,
      variables: {
        input: {
          name: 'GraphQL sale',
          documents: [{ name: 'sale', file: base64(await taggedPdf()) }],
          submitters: [
            { role: 'Buyer', email: 'gb@one-off.test' },
            { role: 'Seller', email: 'gs@one-off.test' },
          ],
        },
      },
    });
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const [submission] = body.data.createSubmissionFromPdf.submissions;
    expect(submission).toMatchObject({
      name: 'GraphQL sale',
      source: 'api',
      submittersOrder: 'preserved',
      status: 'pending',
      template: {
        source: 'one_off',
        name: 'GraphQL sale',
        fields: [
          { name: 'Buyer Name', type: 'text' },
          { name: 'Seller Sign', type: 'signature' },
        ],
        schema: [{ name: 'sale' }],
      },
    });
    expect(submission.submitters.map((s: { role: string }) => s.role)).toEqual(['Buyer', 'Seller']);
    expect(submission.submitters[0].sentAt).not.toBeNull();
    expect((await fetch(submission.submitters[0].embedSrc)).status).toBe(200);
    const templates = await graphql(t.url, '{ templates(limit: 100) { nodes { id } } }', { key: alice.apiKey });
    expect(templates.body.data.templates.nodes.map((n: { id: number }) => n.id)).not.toContain(submission.template.id);
  });

  it('refuses with VALIDATION and stores nothing', async () => {
    const before = await storedCounts();
    const { body } = await graphql(t.url, MUTATION, {
      key: alice.apiKey,
      variables: {
        input: {
          documents: [{ name: 'sale', file: base64(await taggedPdf()) }],
          submitters: [{ role: 'Buyer', email: 'gb@one-off.test', fields: [{ name: 'Nope', defaultValue: 'v' }] }],
        },
      },
    });
    expect(body.errors?.[0]).toMatchObject({ message: 'Unknown field: Nope', extensions: { code: 'VALIDATION' } });
    const html = await graphql(
      t.url,
      /* GraphQL */ `
        mutation ($input: CreateSubmissionFromHtmlInput!) {
          createSubmissionFromHtml(input: $input) { submissionIds }
        }
      `,
      {
        key: alice.apiKey,
        variables: { input: { documents: [{ html: '<p>No fields</p>' }], submitters: [{ email: 'x@one-off.test' }] } },
      },
    );
    expect(html.body.errors?.[0]?.message).toMatch(/^Template does not contain fields/);
    expect(await storedCounts()).toEqual(before);
  });
});
