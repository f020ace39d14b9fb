/**
 * Issue 15: no request property of DocuSeal's OpenAPI is accepted and silently ignored. One test per
 * property that was: POST /submissions' `go_to_last`, `require_email_2fa`, `require_phone_2fa`
 * (top level and per submitter, as DocuSeal's Submitters.normalize_preferences reads them) and a
 * `fields[]` entry's `validation` object (create_from_submitters.rb assign_field_attrs), over REST
 * and GraphQL `createSubmissions`; the create requests' `remove_tags` (the stored PDF's text, by
 * pdftotext), `flatten` (its form, by pdfinfo and mupdf) and `documents[].position` (the documents'
 * order, their own fields with them), on the template and the one-off routes and over GraphQL.
 */
import { execFileSync } from 'node:child_process';
import * as mupdf from 'mupdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, drawPdf, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@honoured.test' });
  const { status, json } = await api('POST', '/templates/pdf', {
    name: 'Honoured',
    documents: [{ name: 'agreement', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Code', role: 'Client', areas: [{ x: 72, y: 72, w: 150, h: 20, page: 1 }] },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 300, w: 150, h: 20, page: 1 }] },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
});

/** POST /submissions that must succeed (answer checked against the OpenAPI schema). */
async function create(body: Record<string, unknown>) {
  const { status, json } = await api('POST', '/submissions', { template_id: templateId, send_email: false, ...body });
  expect(status, JSON.stringify(json)).toBe(200);
  expect(openApiErrors('post', '/submissions', json)).toEqual([]);
  return json as { id: number; role: string; slug: string; preferences: Record<string, unknown> }[];
}

const FORM = /* GraphQL */ `
  query Form($slug: String!) {
    signingForm(slug: $slug) { goToLast fields { name validation } }
  }
`;

async function formOf(slug: string) {
  const { body } = await graphql(t.url, FORM, { variables: { slug } });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data.signingForm as { goToLast: boolean; fields: { name: string; validation: unknown }[] };
}

describe('POST /submissions: go_to_last and the 2FA flags', () => {
  it('go_to_last is stored in preferences (top level for all, a party’s own first) and opens the form', async () => {
    const [client, manager] = await create({
      go_to_last: true,
      submitters: [
        { role: 'Client', email: 'c@honoured.test' },
        { role: 'Manager', email: 'm@honoured.test', go_to_last: false },
      ],
    });
    expect(client!.preferences).toMatchObject({ go_to_last: true });
    expect(manager!.preferences).toMatchObject({ go_to_last: false });
    expect((await api('GET', `/submitters/${client!.id}`)).json.preferences.go_to_last).toBe(true);
    // A form never opened opens at the top unless go_to_last says otherwise.
    expect((await formOf(client!.slug)).goToLast).toBe(true);
    expect((await formOf(manager!.slug)).goToLast).toBe(false);
  });

  it('require_email_2fa / require_phone_2fa: true is refused (422, nothing stored), false is stored', async () => {
    const before = await t.db.submission.count({ where: { accountId: alice.accountId } });
    for (const key of ['require_email_2fa', 'require_phone_2fa']) {
      const top = await api('POST', '/submissions', {
        template_id: templateId,
        [key]: true,
        submitters: [{ role: 'Client', email: 'c@honoured.test' }],
      });
      expect(top.status).toBe(422);
      expect(top.json).toEqual({ error: `${key} is not supported: the signing form has no one-time codes` });
      const own = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [{ role: 'Client', email: 'c@honoured.test', [key]: 'true' }],
      });
      expect(own.status).toBe(422);
      expect(own.json).toEqual({
        error: `${key} is not supported: the signing form has no one-time codes in \`submitters[0]\`.`,
      });
    }
    expect(await t.db.submission.count({ where: { accountId: alice.accountId } })).toBe(before);
    const [client] = await create({
      require_email_2fa: false,
      submitters: [{ role: 'Client', email: 'c@honoured.test', require_phone_2fa: false }],
    });
    expect(client!.preferences).toMatchObject({ require_email_2fa: false, require_phone_2fa: false });
  });
});

describe('POST /submissions: fields[].validation', () => {
  it('is merged into the field’s validation, validation_pattern on top', async () => {
    const [client] = await create({
      submitters: [
        {
          role: 'Client',
          email: 'c@honoured.test',
          fields: [{ name: 'Code', validation: { pattern: '^[A-Z]{4}$', message: 'Four capitals', min: 1 } }],
        },
      ],
    });
    const code = (await formOf(client!.slug)).fields.find((f) => f.name === 'Code')!;
    expect(code.validation).toEqual({ pattern: '^[A-Z]{4}$', message: 'Four capitals', min: 1 });
    const [other] = await create({
      submitters: [
        {
          role: 'Client',
          email: 'c@honoured.test',
          fields: [{ name: 'Code', validation: { message: 'kept', min: 2 }, validation_pattern: '^\\d+$' }],
        },
      ],
    });
    const merged = (await formOf(other!.slug)).fields.find((f) => f.name === 'Code')!;
    expect(merged.validation).toEqual({ message: 'kept', min: 2, pattern: '^\\d+$' });
  });

  it('a pattern RE2 cannot run is refused, naming the place', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Client', email: 'c@honoured.test', fields: [{ name: 'Code', validation: { pattern: '(a' } }] },
      ],
    });
    expect(status).toBe(422);
    expect(json.error).toContain('submitters[0].fields[0].validation.pattern');
  });
});

describe('GraphQL createSubmissions', () => {
  it('takes goToLast, the 2FA flags and a field’s validation as REST does', async () => {
    const CREATE = /* GraphQL */ `
      mutation($input: CreateSubmissionsInput!) {
        createSubmissions(input: $input) { submissions { submitters { slug preferences } } }
      }
    `;
    const run = (input: Record<string, unknown>) =>
      graphql(t.url, CREATE, { key: alice.apiKey, variables: { input: { templateId, sendEmail: false, ...input } } });
    const { body } = await run({
      goToLast: true,
      requireEmail2fa: false,
      submitters: [
        {
          role: 'Client',
          email: 'g@honoured.test',
          requirePhone2fa: false,
          fields: [{ name: 'Code', validation: { pattern: '^x$', message: 'x only' } }],
        },
      ],
    });
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    const submitter = body.data.createSubmissions.submissions[0].submitters[0];
    expect(submitter.preferences).toMatchObject({
      go_to_last: true,
      require_email_2fa: false,
      require_phone_2fa: false,
    });
    const code = (await formOf(submitter.slug)).fields.find((f) => f.name === 'Code')!;
    expect(code.validation).toEqual({ pattern: '^x$', message: 'x only' });
    const refused = await run({ submitters: [{ role: 'Client', email: 'g@honoured.test', requireEmail2fa: true }] });
    expect(refused.body.errors?.[0]?.message).toBe(
      'require_email_2fa is not supported: the signing form has no one-time codes in `submitters[0]`.',
    );
  });
});

/** The stored PDF of a template document. */
async function storedPdf(attachmentUuid: string): Promise<Buffer> {
  const doc = await t.db.templateDocument.findUniqueOrThrow({
    where: { uuid: attachmentUuid },
    include: { file: true },
  });
  return Buffer.from(await t.app.files.storage.read(doc.file.storageKey));
}
const textOf = (pdf: Buffer) => execFileSync('pdftotext', ['-', '-'], { input: pdf }).toString();
const formOfPdf = (pdf: Buffer) =>
  /^Form:\s+(\S+)/m.exec(execFileSync('pdfinfo', ['-'], { input: pdf }).toString())?.[1];
function widgetCount(pdf: Buffer): number {
  const doc = new mupdf.PDFDocument(pdf);
  try {
    let count = 0;
    for (let i = 0; i < doc.countPages(); i += 1) count += doc.loadPage(i).getWidgets().length;
    return count;
  } finally {
    doc.destroy();
  }
}

/** A page with a tag and a line of text. */
const taggedPdf = () =>
  drawPdf([
    {
      texts: [
        { text: 'Plain words stay.', x: 72, y: 72 },
        { text: '{{Buyer Name;role=Buyer}}', x: 72, y: 120 },
      ],
    },
  ]);

/** pdfjs-form_two_pages.pdf (six AcroForm widgets) with "Filled in by hand" typed into Text1. */
function filledFormPdf(): Buffer {
  const doc = new mupdf.PDFDocument(fixturePdf('pdfjs-form_two_pages.pdf'));
  try {
    const widget = doc
      .loadPage(0)
      .getWidgets()
      .find((w) => w.getName() === 'Text1')!;
    widget.setTextValue('Filled in by hand');
    widget.update();
    return Buffer.from(doc.saveToBuffer('').asUint8Array());
  } finally {
    doc.destroy();
  }
}

/** A one-page PDF whose only text is its name, for telling documents apart by order. */
const namedPdf = async (name: string) =>
  base64(await drawPdf([{ texts: [{ text: `Document ${name}`, x: 72, y: 72 }] }]));
const area = { x: 72, y: 200, w: 150, h: 20, page: 1 };

describe('remove_tags', () => {
  it('POST /templates/pdf: false keeps the tags printed (fields still made); default removes them', async () => {
    const file = base64(await taggedPdf());
    const kept = await api('POST', '/templates/pdf', { remove_tags: false, documents: [{ name: 'kept', file }] });
    expect(kept.status, JSON.stringify(kept.json)).toBe(200);
    expect(kept.json.fields.map((f: { name: string }) => f.name)).toEqual(['Buyer Name']);
    expect(textOf(await storedPdf(kept.json.schema[0].attachment_uuid))).toContain('{{Buyer Name;role=Buyer}}');
    const removed = await api('POST', '/templates/pdf', { documents: [{ name: 'removed', file }] });
    const text = textOf(await storedPdf(removed.json.schema[0].attachment_uuid));
    expect(text).toContain('Plain words stay.');
    expect(text).not.toContain('{{');
  });

  it('POST /submissions/pdf: false keeps them too', async () => {
    const { status, json } = await api('POST', '/submissions/pdf', {
      remove_tags: 'false',
      send_email: false,
      documents: [{ name: 'one-off', file: base64(await taggedPdf()) }],
      submitters: [{ role: 'Buyer', email: 'b@honoured.test' }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(textOf(await storedPdf(json.schema[0].attachment_uuid))).toContain('{{Buyer Name;role=Buyer}}');
  });
});

describe('flatten', () => {
  it('POST /templates/pdf: true draws form fields into the pages and removes the form; default keeps it', async () => {
    const file = base64(filledFormPdf());
    const flat = await api('POST', '/templates/pdf', {
      flatten: true,
      documents: [{ name: 'flat', file }],
      fields: [{ name: 'Sign', type: 'signature', areas: [area] }],
    });
    expect(flat.status, JSON.stringify(flat.json)).toBe(200);
    const flattened = await storedPdf(flat.json.schema[0].attachment_uuid);
    expect(formOfPdf(flattened)).toBe('none');
    expect(widgetCount(flattened)).toBe(0);
    expect(textOf(flattened)).toContain('Filled in by hand');
    const kept = await api('POST', '/templates/pdf', {
      documents: [{ name: 'kept', file }],
      fields: [{ name: 'Sign', type: 'signature', areas: [area] }],
    });
    const form = await storedPdf(kept.json.schema[0].attachment_uuid);
    expect(formOfPdf(form)).toBe('AcroForm');
    expect(widgetCount(form)).toBe(6);
  });

  it('POST /submissions/pdf: true flattens the one-off template’s document', async () => {
    const { status, json } = await api('POST', '/submissions/pdf', {
      flatten: true,
      send_email: false,
      documents: [
        { name: 'form', file: base64(filledFormPdf()), fields: [{ name: 'Sign', type: 'signature', areas: [area] }] },
      ],
      submitters: [{ email: 'f@honoured.test' }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    const flattened = await storedPdf(json.schema[0].attachment_uuid);
    expect(formOfPdf(flattened)).toBe('none');
    expect(widgetCount(flattened)).toBe(0);
  });
});

describe('documents[].position', () => {
  it('POST /templates/pdf: documents in position order, own fields with them, top-level pages in it', async () => {
    const { status, json } = await api('POST', '/templates/pdf', {
      documents: [
        { name: 'A', file: await namedPdf('A'), fields: [{ name: 'On A', areas: [area] }] },
        { name: 'B', file: await namedPdf('B'), position: 0, fields: [{ name: 'On B', areas: [area] }] },
        { name: 'C', file: await namedPdf('C'), position: 1 },
      ],
      fields: [{ name: 'Page 1', areas: [area] }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.schema.map((d: { name: string }) => d.name)).toEqual(['B', 'C', 'A']);
    const uuidOf = Object.fromEntries(
      json.schema.map((d: { name: string; attachment_uuid: string }) => [d.name, d.attachment_uuid]),
    );
    const docOf = Object.fromEntries(
      json.fields.map((f: { name: string; areas: { attachment_uuid: string }[] }) => [
        f.name,
        f.areas[0]!.attachment_uuid,
      ]),
    );
    expect(docOf).toEqual({ 'On A': uuidOf.A, 'On B': uuidOf.B, 'Page 1': uuidOf.B });
    expect(textOf(await storedPdf(uuidOf.B))).toContain('Document B');
    // A refusal still names the request's place.
    const refused = await api('POST', '/templates/pdf', {
      documents: [
        { name: 'A', file: await namedPdf('A') },
        { name: 'B', file: await namedPdf('B'), position: -1 },
      ],
    });
    expect(refused.status).toBe(422);
    expect(refused.json.error).toContain('position must be 0 or more');
  });

  it('POST /submissions/pdf and /submissions/html: the one-off template’s documents in position order', async () => {
    const pdf = await api('POST', '/submissions/pdf', {
      send_email: false,
      documents: [
        { name: 'A', file: await namedPdf('A'), fields: [{ name: 'On A', areas: [area] }] },
        { name: 'B', file: await namedPdf('B'), position: 0 },
      ],
      submitters: [{ email: 'p@honoured.test' }],
    });
    expect(pdf.status, JSON.stringify(pdf.json)).toBe(200);
    expect(pdf.json.schema.map((d: { name: string }) => d.name)).toEqual(['B', 'A']);
    expect(pdf.json.fields[0].areas[0].attachment_uuid).toBe(pdf.json.schema[1].attachment_uuid);
    const tag = (name: string) =>
      `<p>${name}</p><text-field name="${name}" style="width: 160px; height: 20px"></text-field>`;
    const html = await api('POST', '/submissions/html', {
      send_email: false,
      documents: [
        { name: 'First given', html: tag('One') },
        { name: 'Second given', html: tag('Two'), position: 0 },
      ],
      submitters: [{ email: 'h@honoured.test' }],
    });
    expect(html.status, JSON.stringify(html.json)).toBe(200);
    expect(html.json.schema.map((d: { name: string }) => d.name)).toEqual(['Second given', 'First given']);
    expect(html.json.fields.map((f: { name: string }) => f.name)).toEqual(['Two', 'One']);
  });

  it('GraphQL createTemplateFromPdf takes removeTags, flatten and position', async () => {
    const { body } = await graphql(
      t.url,
      /* GraphQL */ `
        mutation ($input: CreateTemplateFromFileInput!) {
          createTemplateFromPdf(input: $input) { template { schema { name attachmentUuid } } }
        }
      `,
      {
        key: alice.apiKey,
        variables: {
          input: {
            removeTags: false,
            flatten: true,
            documents: [
              { name: 'form', file: base64(filledFormPdf()) },
              { name: 'tagged', file: base64(await taggedPdf()), position: 0 },
            ],
          },
        },
      },
    );
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    const schema = body.data.createTemplateFromPdf.template.schema as { name: string; attachmentUuid: string }[];
    expect(schema.map((d) => d.name)).toEqual(['tagged', 'form']);
    expect(textOf(await storedPdf(schema[0]!.attachmentUuid))).toContain('{{Buyer Name;role=Buyer}}');
    expect(formOfPdf(await storedPdf(schema[1]!.attachmentUuid))).toBe('none');
  });
});

describe('merge_documents', () => {
  it('POST /submissions/pdf: true makes the given documents one PDF, each field on its page of it', async () => {
    const { status, json } = await api('POST', '/submissions/pdf', {
      name: 'Merged deal',
      merge_documents: true,
      send_email: false,
      documents: [
        { name: 'A', file: await namedPdf('A'), fields: [{ name: 'On A', areas: [area] }] },
        { name: 'B', file: await namedPdf('B'), position: 0, fields: [{ name: 'On B', areas: [area] }] },
      ],
      submitters: [{ email: 'merge@honoured.test' }],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.schema).toEqual([{ attachment_uuid: expect.any(String), name: 'Merged deal' }]);
    const merged = await storedPdf(json.schema[0].attachment_uuid);
    expect(/^Pages:\s+(\d+)/m.exec(execFileSync('pdfinfo', ['-'], { input: merged }).toString())?.[1]).toBe('2');
    expect(textOf(merged).replace(/\s+/g, ' ')).toMatch(/Document B.*Document A/);
    const onPage = Object.fromEntries(
      json.fields.map((f: { name: string; areas: { page: number; attachment_uuid: string }[] }) => [
        f.name,
        [f.areas[0]!.page, f.areas[0]!.attachment_uuid],
      ]),
    );
    expect(onPage).toEqual({
      'On B': [0, json.schema[0].attachment_uuid],
      'On A': [1, json.schema[0].attachment_uuid],
    });
    // Without it, two documents.
    const separate = await api('POST', '/submissions/pdf', {
      send_email: false,
      documents: [
        { name: 'A', file: await namedPdf('A'), fields: [{ name: 'On A', areas: [area] }] },
        { name: 'B', file: await namedPdf('B') },
      ],
      submitters: [{ email: 'merge@honoured.test' }],
    });
    expect(separate.json.schema).toHaveLength(2);
  });

  it('GraphQL createSubmissionFromPdf takes mergeDocuments', async () => {
    const { body } = await graphql(
      t.url,
      /* GraphQL */ `
        mutation ($input: CreateSubmissionFromFileInput!) {
          createSubmissionFromPdf(input: $input) { submissions { template { schema { name } fields { name } } } }
        }
      `,
      {
        key: alice.apiKey,
        variables: {
          input: {
            name: 'GraphQL merged',
            mergeDocuments: true,
            sendEmail: false,
            documents: [
              { name: 'A', file: await namedPdf('A'), fields: [{ name: 'On A', areas: [area] }] },
              { name: 'B', file: await namedPdf('B') },
            ],
            submitters: [{ email: 'gm@honoured.test' }],
          },
        },
      },
    );
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    expect(body.data.createSubmissionFromPdf.submissions[0].template.schema).toEqual([{ name: 'GraphQL merged' }]);
  });
});

describe('refused rather than ignored', () => {
  it('submitters[].invite_by (one-off routes): 422, nothing stored', async () => {
    const before = await t.db.submission.count({ where: { accountId: alice.accountId } });
    const { status, json } = await api('POST', '/submissions/pdf', {
      send_email: false,
      documents: [{ name: 'A', file: await namedPdf('A'), fields: [{ name: 'On A', role: 'Second', areas: [area] }] }],
      submitters: [
        { role: 'First', email: 'first@honoured.test' },
        { role: 'Second', invite_by: 'First' },
      ],
    });
    expect(status).toBe(422);
    expect(json.error).toBe(
      'invite_by is not supported in `submitters[1]`: a party cannot invite another from the signing form; ' +
        'give this party its email or phone.',
    );
    expect(await t.db.submission.count({ where: { accountId: alice.accountId } })).toBe(before);
  });

  it('documents[].dynamic true (POST /templates/docx): 422; false is accepted', async () => {
    const before = await t.db.template.count({ where: { accountId: alice.accountId } });
    const refused = await api('POST', '/templates/docx', {
      documents: [{ name: 'dyn', file: base64(Buffer.from('PK\x03\x04 not read')), dynamic: true }],
    });
    expect(refused.status).toBe(422);
    expect(refused.json.error).toBe(
      'dynamic is not supported in `documents[0]`: documents are kept as PDF (no editable content, no [[variables]]).',
    );
    expect(await t.db.template.count({ where: { accountId: alice.accountId } })).toBe(before);
    const accepted = await api('POST', '/templates/pdf', {
      documents: [{ name: 'static', file: await namedPdf('S'), dynamic: false }],
    });
    expect(accepted.status, JSON.stringify(accepted.json)).toBe(200);
  });
});
