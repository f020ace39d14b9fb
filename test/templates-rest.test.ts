/**
 * DocuSeal's template routes over the REST gateway: create from PDF (fields and text tags),
 * list and get with pagination and filters, update, archive, clone, external_id updates,
 * tenant checks and bad input. Responses are validated against DocuSeal's OpenAPI schemas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, drawPdf, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp({ env: { DOWNLOAD_ALLOW_PRIVATE: 'true' } });
  alice = await t.createAccount({ email: 'alice@templates.test', firstName: 'Alice', lastName: 'A' });
  bob = await t.createAccount({ email: 'bob@templates.test' });
});
afterAll(async () => {
  await t?.close();
});

async function api(method: string, path: string, options: { key?: string; body?: unknown } = {}) {
  const response = await fetch(`${t.url}/api${path}`, {
    method,
    headers: { 'X-Auth-Token': options.key ?? alice.apiKey, 'content-type': 'application/json' },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

const letter = () => base64(fixturePdf('documenso-letter-size.pdf'));

describe('POST /templates/pdf', () => {
  it('creates a template with fields given in points and returns it in DocuSeal shape', async () => {
    const { status, json } = await api('POST', '/templates/pdf', {
      body: {
        name: 'NDA',
        external_id: 'nda-1',
        folder_name: 'Legal / 2026',
        documents: [{ name: 'nda', file: letter() }],
        fields: [
          {
            name: 'Full Name',
            role: 'Employee',
            type: 'text',
            areas: [{ x: 61.2, y: 79.2, w: 122.4, h: 19.8, page: 1 }],
          },
          {
            name: 'Signature',
            role: 'Employee',
            type: 'signature',
            required: true,
            areas: [{ x: 306, y: 396, w: 153, h: 39.6, page: 1 }],
          },
          {
            name: 'Approval',
            role: 'Manager',
            type: 'checkbox',
            required: false,
            areas: [{ x: 0, y: 0, w: 10, h: 10, page: 1 }],
          },
          {
            name: 'Colour',
            role: 'Manager',
            type: 'radio',
            options: ['Red', 'Blue'],
            areas: [{ x: 10, y: 10, w: 10, h: 10, page: 1, option: 'Blue' }],
          },
        ],
      },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('get', '/templates/{id}', json)).toEqual([]);
    expect(json).toMatchObject({
      name: 'NDA',
      shared_link: true,
      external_id: 'nda-1',
      application_key: 'nda-1',
      folder_name: 'Legal / 2026',
      source: 'api',
      author_id: alice.userId,
      account_id: alice.accountId,
      archived_at: null,
      author: { id: alice.userId, email: 'alice@templates.test', first_name: 'Alice', last_name: 'A' },
    });
    expect(json.submitters.map((s: { name: string }) => s.name)).toEqual(['Employee', 'Manager']);
    expect(json.schema).toEqual([{ attachment_uuid: json.documents[0].uuid, name: 'nda' }]);
    const [name, signature, approval, colour] = json.fields;
    expect(name).toMatchObject({
      name: 'Full Name',
      type: 'text',
      required: true,
      submitter_uuid: json.submitters[0].uuid,
    });
    // 612 × 792 points: (61.2, 79.2) → (0.1, 0.1); 122.4 × 19.8 → 0.2 × 0.025; page 1 → 0.
    expect(name.areas).toHaveLength(1);
    const area = name.areas[0];
    expect(area.attachment_uuid).toBe(json.documents[0].uuid);
    expect(area.page).toBe(0);
    expect(area.x).toBeCloseTo(0.1, 6);
    expect(area.y).toBeCloseTo(0.1, 6);
    expect(area.w).toBeCloseTo(0.2, 6);
    expect(area.h).toBeCloseTo(0.025, 6);
    expect(signature.areas[0]).toMatchObject({ page: 0 });
    expect(signature.areas[0].x).toBeCloseTo(0.5, 6);
    expect(approval).toMatchObject({ required: false, submitter_uuid: json.submitters[1].uuid });
    expect(colour.options.map((o: { value: string }) => o.value)).toEqual(['Red', 'Blue']);
    expect(colour.areas[0].option_uuid).toBe(colour.options[1].uuid);

    const [doc] = json.documents;
    expect(doc).toMatchObject({ id: expect.any(Number), uuid: expect.any(String), filename: 'nda.pdf' });
    const pdf = await fetch(doc.url);
    expect(pdf.status).toBe(200);
    expect(
      Buffer.from(await pdf.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');
    const preview = await fetch(doc.preview_image_url);
    expect(preview.headers.get('content-type')).toBe('image/png');
    const png = Buffer.from(await preview.arrayBuffer());
    expect(png.readUInt32BE(16)).toBe(1400);
  });

  it('accepts all 14 field types of the spec', async () => {
    const types = [
      'text',
      'signature',
      'initials',
      'date',
      'image',
      'file',
      'payment',
      'stamp',
      'select',
      'checkbox',
      'multiple',
      'radio',
      'cells',
      'phone',
    ];
    const { status, json } = await api('POST', '/templates/pdf', {
      body: {
        name: 'Every type',
        documents: [{ name: 'all', file: letter() }],
        fields: types.map((type, i) => ({
          name: `F${i}`,
          type,
          ...(['select', 'multiple', 'radio'].includes(type) ? { options: ['A', 'B'] } : {}),
          areas: [{ x: 20, y: 20 + i * 40, w: 100, h: 30, page: 1 }],
        })),
      },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.fields.map((f: { type: string }) => f.type)).toEqual(types);
  });

  it('takes fields from text tags, with roles in order of first appearance', async () => {
    const pdf = await drawPdf([
      { texts: [{ text: 'Name: {{Full Name;role=Buyer}}', x: 72, y: 100 }] },
      {
        texts: [
          { text: '{{Sign;type=signature;role=Seller}}', x: 72, y: 200 },
          { text: '{{Date;type=date;role=Buyer;required=false}}', x: 300, y: 200 },
        ],
      },
    ]);
    const { status, json } = await api('POST', '/templates/pdf', {
      body: { name: 'Tagged', documents: [{ name: 'sale', file: base64(pdf) }] },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.submitters.map((s: { name: string }) => s.name)).toEqual(['Buyer', 'Seller']);
    expect(
      json.fields.map((f: { name: string; type: string; required: boolean }) => [f.name, f.type, f.required]),
    ).toEqual([
      ['Full Name', 'text', true],
      ['Sign', 'signature', true],
      ['Date', 'date', false],
    ]);
    expect(json.fields[1].areas[0].page).toBe(1);
  });

  it('counts top-level field pages across all documents; documents[i].fields are on document i', async () => {
    const a4 = base64(fixturePdf('documenso-a4-size.pdf'));
    const { status, json } = await api('POST', '/templates/pdf', {
      body: {
        name: 'Two documents',
        shared_link: false,
        documents: [
          { name: 'one', file: letter() },
          { name: 'two', file: a4, fields: [{ name: 'On two', areas: [{ x: 10, y: 10, w: 50, h: 20, page: 1 }] }] },
        ],
        // Page 2 overall = page 1 of the second document.
        fields: [{ name: 'Top level', areas: [{ x: 10, y: 10, w: 50, h: 20, page: 2 }] }],
      },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.shared_link).toBe(false);
    const byName = Object.fromEntries(json.fields.map((f: { name: string; areas: unknown[] }) => [f.name, f.areas[0]]));
    expect(byName['On two']).toMatchObject({ attachment_uuid: json.documents[1].uuid, page: 0 });
    expect(byName['Top level']).toMatchObject({ attachment_uuid: json.documents[1].uuid, page: 0 });
    const outOfRange = await api('POST', '/templates/pdf', {
      body: {
        documents: [
          { name: 'one', file: letter() },
          { name: 'two', file: a4 },
        ],
        fields: [{ name: 'X', areas: [{ x: 10, y: 10, w: 10, h: 10, page: 3 }] }],
      },
    });
    expect(outOfRange.status).toBe(422);
    expect(outOfRange.json.error).toMatch(/page 3 is out of range \(1–2\)/);
  });

  it('downloads documents from an http(s) URL', async () => {
    const { createServer } = await import('node:http');
    const bytes = fixturePdf('documenso-a4-size.pdf');
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end(bytes));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as import('node:net').AddressInfo;
      const { status, json } = await api('POST', '/templates/pdf', {
        body: { name: 'From URL', documents: [{ name: 'a4', file: `http://127.0.0.1:${port}/a4.pdf` }] },
      });
      expect(status, JSON.stringify(json)).toBe(200);
      expect(json.documents).toHaveLength(1);
      expect(json.submitters).toEqual([{ name: 'First Party', uuid: expect.any(String) }]);
    } finally {
      server.close();
    }
  });

  it('updates the template with the same external_id instead of creating one', async () => {
    const first = await api('POST', '/templates/pdf', {
      body: { name: 'Versioned', external_id: 'v-1', documents: [{ name: 'one', file: letter() }] },
    });
    const second = await api('POST', '/templates/pdf', {
      body: { external_id: 'v-1', documents: [{ name: 'two', file: base64(fixturePdf('documenso-a4-size.pdf')) }] },
    });
    expect(second.status).toBe(200);
    expect(second.json.id).toBe(first.json.id);
    expect(second.json.name).toBe('Versioned');
    expect(second.json.schema.map((s: { name: string }) => s.name)).toEqual(['two']);
  });

  it('answers bad input with 422 naming the problem, storing nothing', async () => {
    const before = await t.db.template.count();
    const files = await t.db.storedFile.count();
    const cases: [unknown, RegExp][] = [
      [{ name: 'x' }, /documents is required/],
      [{ documents: [] }, /documents must not be empty/],
      [{ documents: [{ name: 'a', file: 'not base64 !!!' }] }, /documents\[0\]/],
      [
        { documents: [{ name: 'a', file: base64(Buffer.from('hello, not a pdf')) }] },
        /documents\[0\].*PDF|PDF.*documents\[0\]/i,
      ],
      [
        {
          documents: [{ name: 'a', file: letter() }],
          fields: [{ type: 'text', areas: [{ x: 1, y: 1, w: 1, h: 1, page: 1 }] }],
        },
        /name is required in `fields\[0\]/,
      ],
      [
        { documents: [{ name: 'a', file: letter() }], fields: [{ name: 'A', type: 'hologram' }] },
        /type "hologram" is not supported in `fields\[0\]`/,
      ],
      [
        {
          documents: [{ name: 'a', file: letter() }],
          fields: [{ name: 'A', areas: [{ x: 1, y: 1, w: 1, h: 1, page: 9 }] }],
        },
        /page 9 is out of range.*fields\[0\]\.areas\[0\]/,
      ],
      [
        {
          documents: [{ name: 'a', file: letter() }],
          fields: [{ name: 'A', areas: [{ x: 600, y: 700, w: 100, h: 100, page: 1 }] }],
        },
        /fields\[0\]\.areas\[0\]/,
      ],
      [{ documents: [{ name: 'a', file: 'http://127.0.0.1:1/nothing.pdf' }] }, /Error loading|documents\[0\]/],
      [{ documents: [{ name: 'a', file: letter() }], folder_name: 'Clients /  / 2026' }, /folder_name/],
    ];
    for (const [body, message] of cases) {
      const { status, json } = await api('POST', '/templates/pdf', { body });
      expect(status, JSON.stringify(body).slice(0, 120)).toBe(422);
      expect(json.error).toMatch(message);
    }
    expect(await t.db.template.count()).toBe(before);
    expect(await t.db.storedFile.count()).toBe(files);
  });
});

describe('a template without fields (DocuSeal accepts it and refuses its submissions)', () => {
  const noFields = (id: number, name: string) =>
    `Template does not contain fields: template ${id} (${JSON.stringify(name)}) has no fields to fill in or sign; ` +
    `add fields to it before creating submissions.`;

  it(
    'is created with a `warnings` entry, its submissions refused with 422 naming it, ' + 'until it has fields',
    async () => {
      const created = await api('POST', '/templates/pdf', {
        body: { name: 'Blank "lease"', external_id: 'blank-1', documents: [{ name: 'blank', file: letter() }] },
      });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      expect(created.json.fields).toEqual([]);
      // DocuSeal's shape, plus the extra key (its clients ignore it).
      const { warnings, ...template } = created.json;
      expect(openApiErrors('get', '/templates/{id}', template)).toEqual([]);
      expect(warnings).toEqual([
        { code: 'TEMPLATE_HAS_NO_FIELDS', message: expect.stringContaining('The template has no fields') },
      ]);
      // GET is DocuSeal's shape only.
      expect((await api('GET', `/templates/${created.json.id}`)).json).not.toHaveProperty('warnings');

      const refused = await api('POST', '/submissions', {
        body: { template_id: created.json.id, send_email: false, submitters: [{ email: 'a@example.test' }] },
      });
      expect(refused).toEqual({ status: 422, json: { error: noFields(created.json.id, 'Blank "lease"') } });
      // The warning's remedy: the same external_id again, with fields. No warning, and submissions work.
      const fixed = await api('POST', '/templates/pdf', {
        body: {
          name: 'Blank "lease"',
          external_id: 'blank-1',
          documents: [{ name: 'blank', file: letter() }],
          fields: [{ name: 'Name', role: 'Tenant', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
        },
      });
      expect(fixed.status, JSON.stringify(fixed.json)).toBe(200);
      expect(fixed.json.id).toBe(created.json.id);
      expect(fixed.json).not.toHaveProperty('warnings');
      const sent = await api('POST', '/submissions', {
        body: { template_id: created.json.id, send_email: false, submitters: [{ email: 'a@example.test' }] },
      });
      expect(sent.status, JSON.stringify(sent.json)).toBe(200);
    },
  );

  it('keeps the warning on the template routes that leave it without fields (clone, documents, merge)', async () => {
    const blank = (
      await api('POST', '/templates/pdf', { body: { name: 'Blank', documents: [{ name: 'blank', file: letter() }] } })
    ).json;
    const clone = await api('POST', `/templates/${blank.id}/clone`, { body: {} });
    const documents = await api('PUT', `/templates/${blank.id}/documents`, {
      body: { documents: [{ name: 'more', file: letter() }] },
    });
    const merged = await api('POST', '/templates/merge', { body: { template_ids: [blank.id, clone.json.id] } });
    for (const response of [clone, documents, merged]) {
      expect(response.status, JSON.stringify(response.json)).toBe(200);
      expect(response.json.warnings.map((w: { code: string }) => w.code)).toEqual(['TEMPLATE_HAS_NO_FIELDS']);
    }
  });
});

describe('GET /templates', () => {
  it('lists active templates ascending by id with DocuSeal pagination and filters', async () => {
    const created: number[] = [];
    for (const name of ['List A', 'List B', 'List C']) {
      const { json } = await api('POST', '/templates/pdf', {
        key: bob.apiKey,
        body: { name, folder_name: 'Sales', documents: [{ name: 'doc', file: letter() }] },
      });
      created.push(json.id);
    }
    const page1 = await api('GET', '/templates?limit=2', { key: bob.apiKey });
    expect(page1.status).toBe(200);
    expect(openApiErrors('get', '/templates', page1.json)).toEqual([]);
    expect(page1.json.data.map((d: { id: number }) => d.id)).toEqual(created.slice(0, 2));
    expect(page1.json.pagination).toEqual({ count: 2, next: created[1], prev: created[0] });
    const page2 = await api('GET', `/templates?limit=2&after=${page1.json.pagination.next}`, { key: bob.apiKey });
    expect(page2.json.data.map((d: { id: number }) => d.id)).toEqual([created[2]]);
    const empty = await api('GET', `/templates?after=${created[2]}`, { key: bob.apiKey });
    expect(empty.json).toEqual({ data: [], pagination: { count: 0, next: null, prev: null } });
    const before = await api('GET', `/templates?before=${created[1]}`, { key: bob.apiKey });
    expect(before.json.data.map((d: { id: number }) => d.id)).toEqual([created[0]]);

    expect(
      (await api('GET', '/templates?q=list b', { key: bob.apiKey })).json.data.map((d: { name: string }) => d.name),
    ).toEqual(['List B']);
    expect((await api('GET', '/templates?folder=Sales', { key: bob.apiKey })).json.data).toHaveLength(3);
    expect((await api('GET', '/templates?folder=Nope', { key: bob.apiKey })).json.data).toHaveLength(0);

    await api('DELETE', `/templates/${created[0]}`, { key: bob.apiKey });
    expect((await api('GET', '/templates', { key: bob.apiKey })).json.data.map((d: { id: number }) => d.id)).toEqual(
      created.slice(1),
    );
    expect(
      (await api('GET', '/templates?archived=true', { key: bob.apiKey })).json.data.map((d: { id: number }) => d.id),
    ).toEqual([created[0]]);
    // Another account's templates never show.
    expect(
      (await api('GET', '/templates?limit=100')).json.data.some((d: { id: number }) => created.includes(d.id)),
    ).toBe(false);
  });

  it('filters by external_id and by its earlier name application_key', async () => {
    const { json } = await api('POST', '/templates/pdf', {
      body: { name: 'Keyed', external_id: 'key-42', documents: [{ name: 'doc', file: letter() }] },
    });
    expect((await api('GET', '/templates?external_id=key-42')).json.data.map((d: { id: number }) => d.id)).toEqual([
      json.id,
    ]);
    expect((await api('GET', '/templates?application_key=key-42')).json.data.map((d: { id: number }) => d.id)).toEqual([
      json.id,
    ]);
  });

  it('caps limit at 100 and refuses non-integers', async () => {
    expect((await api('GET', '/templates?limit=abc')).status).toBe(422);
    expect((await api('GET', '/templates?limit=1000')).status).toBe(200);
  });
});

describe('one template', () => {
  let id: number;
  beforeAll(async () => {
    const { json } = await api('POST', '/templates/pdf', {
      body: {
        name: 'Lease',
        documents: [{ name: 'lease', file: letter() }],
        fields: [{ name: 'Tenant', role: 'Tenant', areas: [{ x: 72, y: 72, w: 100, h: 20, page: 1 }] }],
      },
    });
    id = json.id;
  });

  it('GET /templates/{id}: 200 for the owner, 403 for another account, 404 when unknown', async () => {
    expect((await api('GET', `/templates/${id}`)).json.id).toBe(id);
    expect(await api('GET', `/templates/${id}`, { key: bob.apiKey })).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect((await api('GET', '/templates/99999999')).status).toBe(404);
    expect((await api('GET', '/templates/abc')).status).toBe(404);
  });

  it('PUT /templates/{id} renames, moves, renames roles and answers {id, updated_at}', async () => {
    const { status, json } = await api('PUT', `/templates/${id}`, {
      body: { name: 'Lease 2026', folder_name: 'Housing', roles: ['Renter', 'Guarantor'] },
    });
    expect(status).toBe(200);
    expect(Object.keys(json)).toEqual(['id', 'updated_at']);
    expect(openApiErrors('put', '/templates/{id}', json)).toEqual([]);
    expect(json.id).toBe(id);
    const { json: template } = await api('GET', `/templates/${id}`);
    expect(template).toMatchObject({ name: 'Lease 2026', folder_name: 'Housing' });
    expect(template.submitters.map((s: { name: string }) => s.name)).toEqual(['Renter', 'Guarantor']);
    // The field keeps its role (renamed, same uuid).
    expect(template.fields[0].submitter_uuid).toBe(template.submitters[0].uuid);
    expect((await api('PUT', `/templates/${id}`, { key: bob.apiKey, body: { name: 'x' } })).status).toBe(403);
  });

  it('accepts the earlier shape {template: {folder_name}}', async () => {
    expect(
      (await api('PUT', `/templates/${id}`, { body: { template: { folder_name: 'Archive / Old' } } })).status,
    ).toBe(200);
    expect((await api('GET', `/templates/${id}`)).json.folder_name).toBe('Archive / Old');
  });

  it('POST /templates/{id}/clone copies with new uuids and "(Clone)"', async () => {
    const { status, json } = await api('POST', `/templates/${id}/clone`, { body: { folder_name: 'Copies' } });
    expect(status).toBe(200);
    expect(openApiErrors('post', '/templates/{id}/clone', json)).toEqual([]);
    const { json: source } = await api('GET', `/templates/${id}`);
    expect(json.id).not.toBe(id);
    expect(json.name).toBe(`${source.name} (Clone)`);
    expect(json.folder_name).toBe('Copies');
    expect(json.documents[0].uuid).not.toBe(source.documents[0].uuid);
    expect(json.fields[0].areas[0].attachment_uuid).toBe(json.documents[0].uuid);
    expect(json.fields[0].submitter_uuid).toBe(json.submitters[0].uuid);
    expect(json.submitters[0].uuid).not.toBe(source.submitters[0].uuid);
  });

  it('DELETE archives ({id, archived_at}); PUT archived:false restores', async () => {
    const { status, json } = await api('DELETE', `/templates/${id}`);
    expect(status).toBe(200);
    expect(json).toEqual({ id, archived_at: expect.stringMatching(/Z$/) });
    expect(openApiErrors('delete', '/templates/{id}', json)).toEqual([]);
    expect((await api('GET', `/templates/${id}`)).json.archived_at).toBe(json.archived_at);
    await api('PUT', `/templates/${id}`, { body: { archived: false } });
    expect((await api('GET', `/templates/${id}`)).json.archived_at).toBeNull();
    expect((await api('DELETE', `/templates/${id}`, { key: bob.apiKey })).status).toBe(403);
  });

  it('records template events', async () => {
    const events = await t.db.templateEvent.findMany({ where: { templateId: id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.eventType)).toEqual(
      expect.arrayContaining(['template.created', 'template.updated', 'template.archived']),
    );
  });
});

describe('PUT /templates/{id}/documents', () => {
  async function makeTemplate() {
    const { json } = await api('POST', '/templates/pdf', {
      body: {
        name: 'Docs',
        documents: [{ name: 'first', file: letter() }],
        fields: [{ name: 'Sig', type: 'signature', role: 'Client', areas: [{ x: 72, y: 72, w: 100, h: 30, page: 1 }] }],
      },
    });
    return json;
  }

  it('adds a document at a position and at the end', async () => {
    const template = await makeTemplate();
    const a4 = base64(fixturePdf('documenso-a4-size.pdf'));
    const { status, json } = await api('PUT', `/templates/${template.id}/documents`, {
      body: {
        documents: [
          { name: 'zero', file: a4, position: 0 },
          { name: 'last', file: a4 },
        ],
      },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('put', '/templates/{id}/documents', json)).toEqual([]);
    expect(json.schema.map((s: { name: string }) => s.name)).toEqual(['zero', 'first', 'last']);
    expect(json.fields[0].areas[0].attachment_uuid).toBe(template.documents[0].uuid);
  });

  it("replaces a document, moving the old one's fields when the new one has none", async () => {
    const template = await makeTemplate();
    const { json } = await api('PUT', `/templates/${template.id}/documents`, {
      body: {
        documents: [
          { name: 'second version', file: base64(fixturePdf('documenso-a4-size.pdf')), position: 0, replace: true },
        ],
      },
    });
    expect(json.documents).toHaveLength(1);
    expect(json.documents[0].uuid).not.toBe(template.documents[0].uuid);
    expect(json.fields).toHaveLength(1);
    expect(json.fields[0].areas[0].attachment_uuid).toBe(json.documents[0].uuid);
  });

  it('takes the fields of a replacing document that has text tags, for roles the template has', async () => {
    const template = await makeTemplate();
    const tagged = await drawPdf([{ texts: [{ text: '{{Initials;type=initials;role=Client}}', x: 72, y: 300 }] }]);
    const { json } = await api('PUT', `/templates/${template.id}/documents`, {
      body: { documents: [{ file: base64(tagged), position: 0, replace: true }] },
    });
    expect(json.fields.map((f: { name: string }) => f.name)).toEqual(['Initials']);
    const unknownRole = await drawPdf([{ texts: [{ text: '{{X;role=Stranger}}', x: 72, y: 300 }] }]);
    const refused = await api('PUT', `/templates/${template.id}/documents`, {
      body: { documents: [{ file: base64(unknownRole) }] },
    });
    expect(refused.status).toBe(422);
    expect(refused.json.error).toMatch(/role "Stranger" is not a role of this template.*documents\[0\]/);
  });

  it('removes by name and by position; never the last document', async () => {
    const template = await makeTemplate();
    await api('PUT', `/templates/${template.id}/documents`, {
      body: { documents: [{ name: 'extra', file: letter() }] },
    });
    const byName = await api('PUT', `/templates/${template.id}/documents`, {
      body: { documents: [{ name: 'first', remove: true }] },
    });
    expect(byName.json.schema.map((s: { name: string }) => s.name)).toEqual(['extra']);
    // The removed document's only field went with it.
    expect(byName.json.fields).toEqual([]);
    const last = await api('PUT', `/templates/${template.id}/documents`, {
      body: { documents: [{ position: 0, remove: true }] },
    });
    expect(last.status).toBe(422);
    const missing = await api('PUT', `/templates/${template.id}/documents`, {
      body: { documents: [{ position: 5, remove: true }] },
    });
    expect(missing.status).toBe(422);
    expect(missing.json.error).toMatch(/position 5.*documents\[0\]/);
  });

  it('merges every document into one PDF, remapping pages', async () => {
    const template = await makeTemplate();
    const { json } = await api('PUT', `/templates/${template.id}/documents`, {
      body: {
        documents: [{ name: 'front', file: base64(fixturePdf('documenso-a4-size.pdf')), position: 0 }],
        merge: true,
      },
    });
    expect(json.documents).toHaveLength(1);
    const area = json.fields[0].areas[0];
    expect(area.attachment_uuid).toBe(json.documents[0].uuid);
    expect(area.page).toBe(1);
    const pdf = Buffer.from(await (await fetch(json.documents[0].url)).arrayBuffer());
    const { PDFDocument } = await import('pdf-lib');
    expect((await PDFDocument.load(pdf)).getPageCount()).toBe(2);
  });
});

describe('POST /templates/merge', () => {
  it('makes a new template from several, merging roles by name', async () => {
    const one = await api('POST', '/templates/pdf', {
      body: {
        name: 'Part A',
        documents: [{ name: 'a', file: letter() }],
        fields: [{ name: 'A', role: 'Buyer', areas: [{ x: 1, y: 1, w: 10, h: 10, page: 1 }] }],
      },
    });
    const two = await api('POST', '/templates/pdf', {
      body: {
        name: 'Part B',
        documents: [{ name: 'b', file: letter() }],
        fields: [
          { name: 'B', role: 'buyer', areas: [{ x: 1, y: 1, w: 10, h: 10, page: 1 }] },
          { name: 'C', role: 'Seller', areas: [{ x: 1, y: 1, w: 10, h: 10, page: 1 }] },
        ],
      },
    });
    const { status, json } = await api('POST', '/templates/merge', {
      body: { template_ids: [one.json.id, two.json.id], roles: ['Purchaser'] },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(openApiErrors('post', '/templates/merge', json)).toEqual([]);
    expect(json.name).toBe('Part A (Merged)');
    expect(json.submitters.map((s: { name: string }) => s.name)).toEqual(['Purchaser', 'Seller']);
    expect(json.schema.map((s: { name: string }) => s.name)).toEqual(['a', 'b']);
    expect(json.fields.map((f: { name: string }) => f.name)).toEqual(['A', 'B', 'C']);
    expect(json.fields[1].submitter_uuid).toBe(json.submitters[0].uuid);
    expect(json.fields[1].areas[0].attachment_uuid).toBe(json.documents[1].uuid);

    expect((await api('POST', '/templates/merge', { body: { template_ids: [one.json.id] } })).status).toBe(422);
    expect(
      (await api('POST', '/templates/merge', { key: bob.apiKey, body: { template_ids: [one.json.id, two.json.id] } }))
        .status,
    ).toBe(403);
  });
});
