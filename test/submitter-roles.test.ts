/**
 * One person signing several roles (`submitters[].roles`, DocuSeal's merge_submitters_and_fields):
 * the roles become one role of the submission with all their fields, a field name shared by two
 * roles becomes one field with both areas, the signing form shows them all, and completing it
 * fills every place. Over REST and GraphQL.
 */
import { v5 as uuidV5 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let template: { id: number; submitters: { name: string; uuid: string }[] };
const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const area = (y: number) => [{ x: 72, y, w: 150, h: 24, page: 1 }];

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@roles.test' });
  const created = await api('POST', '/templates/pdf', {
    name: 'Three roles',
    documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Name', role: 'Buyer', areas: area(72) },
      { name: 'Buyer Note', role: 'Buyer', required: false, areas: area(110) },
      { name: 'Name', role: 'Guarantor', areas: area(150) },
      { name: 'Guarantee', role: 'Guarantor', areas: area(190) },
      { name: 'Seller Name', role: 'Seller', areas: area(300) },
    ],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  template = created.json;
});
afterAll(async () => {
  await t?.close();
});

describe('submitters[].roles', () => {
  it('merges the roles into one party with all their fields', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: template.id,
      send_email: false,
      submitters: [
        { roles: ['buyer', 'Guarantor'], email: 'both@roles.test' },
        { role: 'Seller', email: 'seller@roles.test' },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.map((s: { role: string }) => s.role)).toEqual(['Buyer / Guarantor', 'Seller']);
    const [buyer, guarantor] = template.submitters.filter((r) => r.name !== 'Seller');
    const mergedUuid = uuidV5([buyer!.uuid, guarantor!.uuid].sort().join(':'), '6ba7b812-9dad-11d1-80b4-00c04fd430c8');
    const party = await t.db.submitter.findUniqueOrThrow({ where: { id: json[0].id } });
    expect(party.roleUuid).toBe(mergedUuid);

    const submission = await t.db.submission.findUniqueOrThrow({ where: { id: json[0].submission_id } });
    const fields = submission.templateFields as { name: string; submitter_uuid: string; areas: unknown[] }[];
    const own = fields.filter((f) => f.submitter_uuid === mergedUuid);
    expect(own.map((f) => [f.name, f.areas.length])).toEqual([
      ['Name', 2],
      ['Buyer Note', 1],
      ['Guarantee', 1],
    ]);
    expect(fields.filter((f) => f.submitter_uuid !== mergedUuid).map((f) => f.name)).toEqual(['Seller Name']);
    // The template itself is unchanged.
    const after = (await api('GET', `/templates/${template.id}`)).json;
    expect(after.fields.map((f: { name: string }) => f.name)).toEqual([
      'Name',
      'Buyer Note',
      'Name',
      'Guarantee',
      'Seller Name',
    ]);

    // Completing the merged party fills both places of "Name".
    const completed = await api('PUT', `/submitters/${json[0].id}`, {
      completed: true,
      values: { Name: 'Ada', Guarantee: 'Yes' },
    });
    expect(completed.status, JSON.stringify(completed.json)).toBe(200);
    expect(completed.json.values).toEqual(
      expect.arrayContaining([
        { field: 'Name', value: 'Ada' },
        { field: 'Guarantee', value: 'Yes' },
      ]),
    );
  });

  it('names the merged role by `role` when given; one name is the same as `role`', async () => {
    const named = await api('POST', '/submissions', {
      template_id: template.id,
      send_email: false,
      submitters: [
        { roles: ['Buyer', 'Guarantor'], role: 'Buyer and guarantor', email: 'b@roles.test' },
        { roles: ['Seller'], email: 's@roles.test' },
      ],
    });
    expect(named.status, JSON.stringify(named.json)).toBe(200);
    expect(named.json.map((s: { role: string }) => s.role)).toEqual(['Buyer and guarantor', 'Seller']);
  });

  it('refuses a role the template does not have, as DocuSeal words it', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: template.id,
      submitters: [{ roles: ['Buyer', 'Witness'], email: 'w@roles.test' }],
    });
    expect(status).toBe(422);
    expect(json).toEqual({ error: "Witness role doesn't exist" });
  });

  it('works over GraphQL', async () => {
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': alice.apiKey },
      body: JSON.stringify({
        query: `mutation($input: CreateSubmissionsInput!) {
          createSubmissions(input: $input) { submitters { role } }
        }`,
        variables: {
          input: {
            templateId: template.id,
            sendEmail: false,
            submitters: [
              { roles: ['Buyer', 'Guarantor'], email: 'g@roles.test' },
              { role: 'Seller', email: 'x@roles.test' },
            ],
          },
        },
      }),
    });
    const body = await response.json();
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    expect(JSON.stringify(body.data)).toContain('Buyer / Guarantor');
  });
});
