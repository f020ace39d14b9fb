/**
 * PUT /templates/{id} `fields` and `submitters` as full replacement lists (DocuSeal's
 * templates_controller#update `@template.update!(template_params)`), and the area rule of create
 * and update requests (src/templates/build-fields.ts AREA_RULE): points with page 1-based when any
 * of x, y, w, h is over 1, else fractions of the page with page 0-based as GET answers them. REST
 * and GraphQL, on a real service: the GET → PUT → GET round trip, replacement semantics (roles
 * removed and added, fields removed, uuids kept), 422s that change nothing, the template.updated
 * webhook, answers checked against DocuSeal's OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let receiver: Receiver;
let alice: CreatedAccount;
let onePage: string;
let twoPages: string;

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const gql = (query: string, variables: Record<string, unknown> = {}) =>
  graphql(t.url, query, { key: alice.apiKey, variables });

/** Signed file URLs differ by their token (expiry); compare them without it. */
const withoutTokens = (value: unknown) =>
  JSON.parse(JSON.stringify(value).replace(/\/file\/[^/"]+\//g, '/file/TOKEN/'));
/** A template as GET answers it, without what every PUT changes (updated_at) and the URL tokens. */
const stable = (template: Record<string, unknown>) => withoutTokens({ ...template, updated_at: 'X' });

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startReceiver();
  alice = await t.createAccount({ email: 'alice@template-fields.test' });
  onePage = base64(await drawPdf([{ size: [612, 792], texts: [{ text: 'One', x: 72, y: 72 }] }]));
  twoPages = base64(
    await drawPdf([{ size: [612, 792] }, { size: [595, 842], texts: [{ text: 'Two', x: 72, y: 72 }] }]),
  );
  const { body } = await gql(
    `mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }`,
    { input: { url: `${receiver.url}/hooks`, events: ['template.updated'] } },
  );
  expect(body.errors).toBeUndefined();
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** A template of two documents (1 and 2 pages), roles Seller and Buyer, fields of every kind of key. */
async function richTemplate(name: string) {
  const created = await api('POST', '/templates/pdf', {
    name,
    documents: [
      {
        name: 'first',
        file: onePage,
        fields: [
          { name: 'Seller Name', role: 'Seller', areas: [{ x: 72, y: 100, w: 200, h: 20, page: 1 }] },
          {
            name: 'Notes',
            role: 'Seller',
            title: 'Your notes',
            description: 'Anything',
            readonly: true,
            required: false,
            default_value: 'none',
            validation: { pattern: '^[a-z]+$', message: 'lower case' },
            preferences: { font_size: 12 },
            areas: [{ x: 72, y: 140, w: 200, h: 20, page: 1 }],
          },
        ],
      },
      {
        name: 'second',
        file: twoPages,
        fields: [
          { name: 'Buyer Sign', role: 'Buyer', type: 'signature', areas: [{ x: 72, y: 600, w: 150, h: 40, page: 2 }] },
          {
            name: 'Colour',
            role: 'Buyer',
            type: 'radio',
            options: ['Red', 'Blue'],
            areas: [
              { x: 72, y: 100, w: 12, h: 12, page: 1, option: 'Red' },
              { x: 100, y: 100, w: 12, h: 12, page: 1, option: 'Blue' },
            ],
          },
          {
            name: 'Extras',
            role: 'Buyer',
            type: 'multiple',
            options: ['Wax', 'Polish'],
            default_value: ['Wax'],
            conditions: [{ field_name: 'Colour', action: 'equal', value: 'Red' }],
            areas: [{ x: 72, y: 200, w: 100, h: 20, page: 1 }],
          },
          {
            name: 'Code',
            role: 'Buyer',
            type: 'cells',
            conditions: [{ field_name: 'Seller Name', action: 'not_empty' }],
            areas: [{ x: 72, y: 300, w: 120, h: 20, page: 2, cell_w: 20 }],
          },
        ],
      },
    ],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return created.json as {
    id: number;
    fields: {
      uuid: string;
      name: string;
      submitter_uuid: string;
      areas: Record<string, unknown>[];
      conditions?: unknown[];
    }[];
    submitters: { name: string; uuid: string }[];
    documents: { uuid: string }[];
  };
}

describe('PUT /templates/{id}: fields and submitters replace the template’s lists', () => {
  it('GET → PUT the same fields and submitters → GET gives the same template (but updated_at)', async () => {
    const { id } = await richTemplate('Round trip');
    const first = await api('GET', `/templates/${id}`);
    expect(first.json.fields).toHaveLength(6);
    expect(first.json.fields.filter((f: { conditions?: unknown }) => f.conditions)).toHaveLength(2);
    expect(first.json.fields.find((f: { name: string }) => f.name === 'Code').areas[0].cell_w).toBeCloseTo(20 / 595);
    const put = await api('PUT', `/templates/${id}`, { fields: first.json.fields, submitters: first.json.submitters });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(openApiErrors('put', '/templates/{id}', put.json)).toEqual([]);
    const second = await api('GET', `/templates/${id}`);
    expect(openApiErrors('get', '/templates/{id}', second.json)).toEqual([]);
    expect(stable(second.json)).toEqual(stable(first.json));
    expect(second.json.updated_at).toBe(put.json.updated_at);
    // Sent back a second time (as a client editing in a loop would): still the same.
    await api('PUT', `/templates/${id}`, { template: { fields: second.json.fields } });
    expect(stable((await api('GET', `/templates/${id}`)).json)).toEqual(stable(first.json));
  });

  it('submitters: a given uuid keeps a role and its fields, an unlisted role goes with its fields', async () => {
    const template = await richTemplate('Roles');
    const [seller, buyer] = template.submitters;
    const put = await api('PUT', `/templates/${template.id}`, {
      submitters: [
        { name: 'Purchaser', uuid: buyer!.uuid, is_requester: false },
        { name: 'Witness', email: 'ignored@example.com' },
      ],
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    const after = (await api('GET', `/templates/${template.id}`)).json;
    expect(after.submitters).toEqual([
      { name: 'Purchaser', uuid: buyer!.uuid },
      { name: 'Witness', uuid: expect.any(String) },
    ]);
    expect(after.submitters[1].uuid).not.toBe(seller!.uuid);
    // Seller's fields went with Seller (DocuSeal's builder removes a role's fields with it); Buyer's stay as they were.
    // A condition naming a removed field goes too (Code's on Seller Name); Extras' on Colour stays.
    const buyerFields = template.fields
      .filter((f) => f.submitter_uuid === buyer!.uuid)
      .map(({ conditions, ...f }) => (f.name === 'Code' ? f : { ...f, ...(conditions ? { conditions } : {}) }));
    expect(after.fields).toEqual(buyerFields);
    expect(after.fields.find((f: { name: string }) => f.name === 'Extras').conditions).toEqual([
      {
        field_uuid: template.fields.find((f) => f.name === 'Colour')!.uuid,
        value: expect.any(String),
        action: 'equal',
      },
    ]);
    expect(after.fields.map((f: { name: string }) => f.name)).toEqual(['Buyer Sign', 'Colour', 'Extras', 'Code']);
  });

  it('fields: the list replaces the fields; given uuids kept; role by name or submitter_uuid', async () => {
    const template = await richTemplate('Fields');
    const [seller, buyer] = template.submitters;
    const kept = template.fields.find((f) => f.name === 'Buyer Sign')!;
    const [doc1, doc2] = template.documents;
    const put = await api('PUT', `/templates/${template.id}`, {
      submitters: [...template.submitters, { name: 'Witness' }],
      fields: [
        { ...kept, name: 'Buyer Signature' },
        // Fractions (all of x, y, w, h within 0..1), page 0-based, on a document named by attachment_uuid.
        {
          name: 'Witness Sign',
          role: 'witness',
          type: 'signature',
          areas: [{ x: 0.1, y: 0.5, w: 0.3, h: 0.05, page: 1, attachment_uuid: doc2!.uuid }],
        },
        // Points, page 1-based counting across the documents in order: page 2 is the second document's first page.
        {
          name: 'Date',
          submitter_uuid: seller!.uuid,
          type: 'date',
          areas: [{ x: 61.2, y: 79.2, w: 122.4, h: 19.8, page: 2 }],
        },
        { name: 'No areas', uuid: 'my-own-uuid', submitter_uuid: buyer!.uuid },
      ],
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    const after = (await api('GET', `/templates/${template.id}`)).json;
    expect(openApiErrors('get', '/templates/{id}', after)).toEqual([]);
    const witness = after.submitters[2];
    expect(after.fields).toEqual([
      { ...kept, name: 'Buyer Signature' },
      {
        uuid: expect.any(String),
        submitter_uuid: witness.uuid,
        name: 'Witness Sign',
        type: 'signature',
        required: true,
        preferences: {},
        areas: [{ x: 0.1, y: 0.5, w: 0.3, h: 0.05, page: 1, attachment_uuid: doc2!.uuid }],
      },
      {
        uuid: expect.any(String),
        submitter_uuid: seller!.uuid,
        name: 'Date',
        type: 'date',
        required: true,
        preferences: {},
        areas: [{ x: 0.1, y: 0.1, w: 0.2, h: 0.025, page: 0, attachment_uuid: doc2!.uuid }],
      },
      {
        uuid: 'my-own-uuid',
        submitter_uuid: buyer!.uuid,
        name: 'No areas',
        type: 'text',
        required: true,
        preferences: {},
        areas: [],
      },
    ]);
    expect(after.fields.map((f: { uuid: string }) => f.uuid)).not.toContain(
      template.fields.find((f) => f.name === 'Colour')!.uuid,
    );
    expect(doc1).toBeDefined();
    // An empty list removes every field.
    await api('PUT', `/templates/${template.id}`, { fields: [] });
    expect((await api('GET', `/templates/${template.id}`)).json.fields).toEqual([]);
  });

  it('bad fields or submitters → 422 naming them; nothing is changed and no template.updated', async () => {
    const template = await richTemplate('Refusals');
    const before = (await api('GET', `/templates/${template.id}`)).json;
    const events = () => t.db.templateEvent.count({ where: { templateId: template.id } });
    const eventsBefore = await events();
    const doc = template.documents[0]!.uuid;
    const area = (a: Record<string, unknown>) => ({ name: 'A', areas: [{ page: 0, attachment_uuid: doc, ...a }] });
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ fields: [{ type: 'text' }] }, /name is required in `fields\[0\]/],
      [{ fields: [{ name: 'A', type: 'hologram' }] }, /type "hologram" is not supported in `fields\[0\]`/],
      [{ fields: [{ name: 'A', role: 'Nobody' }] }, /role "Nobody" is not a role of this template .* in `fields\[0\]`/],
      [{ fields: [{ name: 'A', submitter_uuid: 'nope' }] }, /submitter_uuid "nope" is not a role of this template/],
      [
        { fields: [{ name: 'A', role: 'Seller', submitter_uuid: template.submitters[1]!.uuid }] },
        /role "Seller" and submitter_uuid .* name different roles in `fields\[0\]`/,
      ],
      [
        {
          submitters: [{ name: 'Only' }],
          fields: [{ name: 'A', submitter_uuid: template.submitters[0]!.uuid }],
        },
        /submitter_uuid ".*" is not a role of this template \(Only: .*\) in `fields\[0\]`/,
      ],
      [
        {
          fields: [
            { name: 'A', uuid: 'u' },
            { name: 'B', uuid: 'u' },
          ],
        },
        /uuid "u" is given to another field too in `fields\[1\]`/,
      ],
      [
        { fields: [area({ x: 0.1, y: 0.1, w: 0.1, h: 0.1, attachment_uuid: 'gone' })] },
        /attachment_uuid "gone" is not a document of this template/,
      ],
      [
        { fields: [area({ x: 0.1, y: 0.1, w: 0.1, h: 0.1, page: 1 })] },
        /`fields\[0\]\.areas\[0\]`: page 1 is out of range; the document has 1 page/,
      ],
      [
        { fields: [area({ x: 0.9, y: 0.1, w: 0.2, h: 0.1 })] },
        /`fields\[0\]\.areas\[0\]`: the area .* does not fit on page 0/,
      ],
      [
        { fields: [area({ x: 0.1, y: 0.1, w: 0, h: 0.1 })] },
        /`fields\[0\]\.areas\[0\]`: w and h must be greater than 0/,
      ],
      [
        { fields: [area({ x: -0.1, y: 0.1, w: 0.1, h: 0.1 })] },
        /`fields\[0\]\.areas\[0\]`: x and y must not be negative/,
      ],
      [
        { fields: [area({ x: 600, y: 10, w: 100, h: 10, page: 1 })] },
        /`fields\[0\]\.areas\[0\]`: the area .* points\) does not fit/,
      ],
      [
        {
          fields: [
            {
              name: 'Mixed',
              areas: [
                { x: 0.1, y: 0.1, w: 0.1, h: 0.1, page: 0 },
                { x: 72, y: 72, w: 100, h: 20, page: 1 },
              ],
            },
          ],
        },
        /`fields\[0\]` mixes areas in points .*areas\[1\].* and in fractions of the page \(areas\[0\]\)/,
      ],
      [
        {
          fields: [
            {
              name: 'R',
              type: 'radio',
              options: ['a'],
              areas: [{ x: 0.1, y: 0.1, w: 0.1, h: 0.1, page: 0, option_uuid: 'x' }],
            },
          ],
        },
        /option_uuid "x" is not one of the field's options in `fields\[0\]\.areas\[0\]`/,
      ],
      [
        {
          fields: [
            {
              name: 'R',
              type: 'radio',
              options: [
                { value: 'a', uuid: 'o' },
                { value: 'b', uuid: 'o' },
              ],
            },
          ],
        },
        /uuid "o" is given to two options/,
      ],
      [{ fields: 'all' }, /fields must be a Array/],
      [{ submitters: [] }, /submitters must list at least one role/],
      [{ submitters: [{ name: '' }] }, /name is required/],
      [
        {
          submitters: [
            { name: 'A', uuid: 'same' },
            { name: 'B', uuid: 'same' },
          ],
        },
        /uuid "same" is given to two roles in `submitters\[1\]`/,
      ],
      [{ submitters: [{ name: 'Twin' }, { name: 'twin' }] }, /name "twin" is given to two roles in `submitters\[1\]`/],
      [{ roles: ['X'], submitters: [{ name: 'Y' }] }, /give roles .* or submitters .*, not both/],
      // Valid parts in the same request are not applied either.
      [{ name: 'Renamed', fields: [{ name: 'A', role: 'Nobody' }] }, /role "Nobody"/],
    ];
    for (const [body, message] of cases) {
      const { status, json } = await api('PUT', `/templates/${template.id}`, body);
      expect(status, JSON.stringify(body)).toBe(422);
      expect(json.error, JSON.stringify(body)).toMatch(message);
      expect(Object.keys(json)).toEqual(['error']);
    }
    expect(stable((await api('GET', `/templates/${template.id}`)).json)).toEqual(stable(before));
    expect((await api('GET', `/templates/${template.id}`)).json.updated_at).toBe(before.updated_at);
    expect(await events()).toBe(eventsBefore);
  });

  it('template.updated carries the template with the replaced fields and roles (GET /templates/{id})', async () => {
    const template = await richTemplate('Webhook');
    const put = await api('PUT', `/templates/${template.id}`, {
      submitters: [{ name: 'Solo' }],
      fields: [{ name: 'Only', role: 'Solo', areas: [{ x: 0.25, y: 0.25, w: 0.5, h: 0.05, page: 0 }] }],
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    const [request] = await receiver.waitFor((all) =>
      all.some((r) => r.json?.event_type === 'template.updated' && r.json?.data?.id === template.id),
    );
    const event = receiver.requests.find(
      (r) => r.json?.event_type === 'template.updated' && r.json?.data?.id === template.id,
    )!;
    expect(request).toBeDefined();
    const get = (await api('GET', `/templates/${template.id}`)).json;
    expect(withoutTokens(event.json.data)).toEqual(withoutTokens(get));
    expect(event.json.data.submitters).toEqual([{ name: 'Solo', uuid: expect.any(String) }]);
    expect(event.json.data.fields).toEqual([
      expect.objectContaining({
        name: 'Only',
        submitter_uuid: event.json.data.submitters[0].uuid,
        areas: [{ x: 0.25, y: 0.25, w: 0.5, h: 0.05, page: 0, attachment_uuid: template.documents[0]!.uuid }],
      }),
    ]);
  });
});

describe('the area rule on create: points, fractions, ambiguous → 422', () => {
  const stored = async (body: Record<string, unknown>) => {
    const { status, json } = await api('POST', '/templates/pdf', { name: 'Areas', ...body });
    expect(status, JSON.stringify(json)).toBe(200);
    return json as { fields: { areas: Record<string, unknown>[] }[]; documents: { uuid: string }[] };
  };

  it('reads each area as points (any of x, y, w, h over 1; page 1-based) or fractions (page 0-based)', async () => {
    const json = await stored({
      documents: [
        { name: 'one', file: onePage },
        { name: 'two', file: twoPages },
      ],
      fields: [
        { name: 'Points', areas: [{ x: 61.2, y: 79.2, w: 122.4, h: 19.8, page: 1 }] },
        { name: 'One point over 1', areas: [{ x: 0.5, y: 0.5, w: 61.2, h: 0.5, page: 1 }] },
        // Top-level fractions count pages across the documents from 0: page 2 is the second document's second page.
        { name: 'Fractions', areas: [{ x: 0.1, y: 0.2, w: 0.3, h: 0.04, page: 2 }] },
        { name: 'Whole page', areas: [{ x: 0, y: 0, w: 1, h: 1, page: 0 }] },
      ],
    });
    const [one, two] = json.documents;
    expect(json.fields.map((f) => f.areas[0])).toEqual([
      { x: 0.1, y: 0.1, w: 0.2, h: 0.025, page: 0, attachment_uuid: one!.uuid },
      { x: 0.5 / 612, y: 0.5 / 792, w: 0.1, h: 0.5 / 792, page: 0, attachment_uuid: one!.uuid },
      { x: 0.1, y: 0.2, w: 0.3, h: 0.04, page: 1, attachment_uuid: two!.uuid },
      { x: 0, y: 0, w: 1, h: 1, page: 0, attachment_uuid: one!.uuid },
    ]);
  });

  it('fields read with GET can be sent to create: attachment_uuid stands for the request’s document', async () => {
    const source = await richTemplate('Source');
    const sourceGet = (await api('GET', `/templates/${source.id}`)).json;
    const onFirst = sourceGet.fields.filter((f: { areas: { attachment_uuid: string }[] }) =>
      f.areas.every((a) => a.attachment_uuid === source.documents[0]!.uuid),
    );
    const onSecond = sourceGet.fields.filter((f: { areas: { attachment_uuid: string }[] }) =>
      f.areas.every((a) => a.attachment_uuid === source.documents[1]!.uuid),
    );
    // One document: top-level fields land on it. On create fields name their role with `role`, not submitter_uuid.
    // (Given field and option uuids are kept: conditions name them.)
    const strip = (fields: Record<string, unknown>[]) => fields.map(({ submitter_uuid: _s, ...f }) => f);
    const single = await stored({ documents: [{ name: 'one', file: onePage }], fields: strip(onFirst) });
    expect(single.fields.map((f) => f.areas)).toEqual(
      onFirst.map((f: { areas: Record<string, unknown>[] }) =>
        f.areas.map((a) => ({ ...a, attachment_uuid: single.documents[0]!.uuid })),
      ),
    );
    // Several documents: each document's fields with it.
    const both = await stored({
      documents: [
        { name: 'one', file: onePage, fields: strip(onFirst) },
        { name: 'two', file: twoPages, fields: strip(onSecond) },
      ],
    });
    expect(both.fields.flatMap((f) => f.areas.map((a) => a.attachment_uuid))).toEqual([
      ...onFirst.flatMap((f: { areas: unknown[] }) => f.areas.map(() => both.documents[0]!.uuid)),
      ...onSecond.flatMap((f: { areas: unknown[] }) => f.areas.map(() => both.documents[1]!.uuid)),
    ]);
  });

  it('ambiguous or impossible areas → 422 naming the field, nothing stored', async () => {
    const count = await t.db.template.count();
    const fraction = { x: 0.1, y: 0.1, w: 0.1, h: 0.1, page: 0 };
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        {
          documents: [
            { name: 'one', file: onePage },
            { name: 'two', file: twoPages },
          ],
          fields: [{ name: 'A', areas: [{ ...fraction, attachment_uuid: 'from-get' }] }],
        },
        /"from-get" names a document of another template and this request has 2 documents.*`fields\[0\]\.areas\[0\]`/,
      ],
      [
        {
          documents: [{ name: 'one', file: onePage }],
          fields: [
            { name: 'A', areas: [{ ...fraction, attachment_uuid: 'doc-a' }] },
            { name: 'B', areas: [{ ...fraction, attachment_uuid: 'doc-b' }] },
          ],
        },
        /"doc-b" and "doc-a" both stand for documents\[0\] of this request in `fields\[1\]\.areas\[0\]`/,
      ],
      [
        {
          documents: [{ name: 'one', file: onePage }],
          fields: [{ name: 'A', submitter_uuid: 'r', areas: [fraction] }],
        },
        /submitter_uuid names a role of an existing template: name the role with `role` in `fields\[0\]`/,
      ],
      [
        {
          documents: [{ name: 'one', file: onePage }],
          fields: [{ name: 'A', areas: [fraction, { x: 72, y: 72, w: 10, h: 10, page: 1 }] }],
        },
        /`fields\[0\]` mixes areas in points/,
      ],
      [
        { documents: [{ name: 'one', file: onePage }], fields: [{ name: 'A', areas: [{ ...fraction, page: 1 }] }] },
        /page 1 is out of range \(0–0, 0-based/,
      ],
      [
        { documents: [{ name: 'one', file: onePage }], fields: [{ name: 'A', areas: [{ ...fraction, y: 0.95 }] }] },
        /does not fit on page 0/,
      ],
      [
        { documents: [{ name: 'one', file: onePage }], fields: [{ name: 'A', areas: [{ ...fraction, h: -0.1 }] }] },
        /w and h must be greater than 0/,
      ],
      [
        { documents: [{ name: 'one', file: onePage }], fields: [{ name: 'A', areas: [{ ...fraction, w: 0 }] }] },
        /w and h must be greater than 0/,
      ],
    ];
    for (const [body, message] of cases) {
      const { status, json } = await api('POST', '/templates/pdf', body);
      expect(status, JSON.stringify(body)).toBe(422);
      expect(json.error, JSON.stringify(body)).toMatch(message);
    }
    expect(await t.db.template.count()).toBe(count);
  });
});

describe('GraphQL updateTemplate: fields and submitters', () => {
  const TEMPLATE = /* GraphQL */ `
    query ($id: Int!) {
      template(id: $id) {
        name updatedAt
        roles { name uuid }
        fields {
          uuid submitterUuid name type required readonly defaultValue title description preferences validation
          options { value uuid }
          areas { x y w h page attachmentUuid optionUuid cellW }
          conditions { fieldUuid value action operation }
        }
      }
    }
  `;
  const UPDATE = /* GraphQL */ `
    mutation ($input: UpdateTemplateInput!) { updateTemplate(input: $input) { template { id updatedAt } } }
  `;
  /** GraphQL's answer as UpdateTemplateInput takes it back (nulls left out). */
  const asInput = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(asInput)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([, v]) => v !== null)
              .map(([k, v]) => [k, asInput(v)]),
          )
        : value;

  it('query → updateTemplate with the same fields and roles → the same template; replacement; refusals', async () => {
    const { id, documents } = await richTemplate('GraphQL');
    const first = await gql(TEMPLATE, { id });
    expect(first.body.errors).toBeUndefined();
    const { roles, fields } = first.body.data.template;
    const sent = await gql(UPDATE, { input: { id, submitters: roles, fields: asInput(fields) } });
    expect(sent.body.errors).toBeUndefined();
    const second = await gql(TEMPLATE, { id });
    expect({ ...second.body.data.template, updatedAt: 'X' }).toEqual({ ...first.body.data.template, updatedAt: 'X' });
    expect(second.body.data.template.updatedAt).toBe(sent.body.data.updateTemplate.template.updatedAt);

    const replaced = await gql(UPDATE, {
      input: {
        id,
        submitters: [{ name: 'Buyer', uuid: roles[1].uuid }],
        fields: [
          {
            name: 'Fraction',
            role: 'Buyer',
            areas: [{ x: 0.5, y: 0.5, w: 0.25, h: 0.1, page: 1, attachmentUuid: documents[1]!.uuid }],
          },
        ],
      },
    });
    expect(replaced.body.errors).toBeUndefined();
    const third = (await gql(TEMPLATE, { id })).body.data.template;
    expect(third.roles).toEqual([{ name: 'Buyer', uuid: roles[1].uuid }]);
    expect(third.fields).toEqual([
      expect.objectContaining({
        name: 'Fraction',
        submitterUuid: roles[1].uuid,
        areas: [
          {
            x: 0.5,
            y: 0.5,
            w: 0.25,
            h: 0.1,
            page: 1,
            attachmentUuid: documents[1]!.uuid,
            optionUuid: null,
            cellW: null,
          },
        ],
      }),
    ]);

    const refused = await gql(UPDATE, {
      input: {
        id,
        name: 'Not applied',
        fields: [{ name: 'A', areas: [{ x: 0.5, y: 0.5, w: 0.75, h: 0.1, page: 0 }] }],
      },
    });
    expect(refused.body.errors?.[0]?.message).toMatch(/`fields\[0\]\.areas\[0\]`: the area .* does not fit on page 0/);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    expect((await gql(TEMPLATE, { id })).body.data.template).toEqual(third);
  });
});
