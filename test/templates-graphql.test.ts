/**
 * Templates over GraphQL: the same operations as REST, tenant scoping, typed errors, and a
 * constant number of queries for the list whatever its length.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@gql-templates.test' });
  bob = await t.createAccount({ email: 'bob@gql-templates.test' });
});
afterAll(async () => {
  await t?.close();
});

const CREATE = /* GraphQL */ `
  mutation Create($input: CreateTemplateFromFileInput!) {
    createTemplateFromPdf(input: $input) {
      template {
        id name folderName roles { name uuid } fields { name type areas { page x y w h attachmentUuid } }
        documents { uuid url previewImageUrl pageCount }
      }
    }
  }
`;

async function createTemplate(key: string, name: string, folderName?: string) {
  const { body } = await graphql(t.url, CREATE, {
    key,
    variables: {
      input: {
        name,
        folderName,
        documents: [{ name: 'doc', file: base64(fixturePdf('documenso-a4-size.pdf')) }],
        fields: [
          { name: 'Sign here', type: 'signature', role: 'Signer', areas: [{ x: 100, y: 200, w: 150, h: 40, page: 1 }] },
        ],
      },
    },
  });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data.createTemplateFromPdf.template;
}

describe('createTemplateFromPdf', () => {
  it('creates a template with areas as fractions of the displayed page', async () => {
    const template = await createTemplate(alice.apiKey, 'GraphQL NDA', 'Contracts / NDA');
    expect(template).toMatchObject({ name: 'GraphQL NDA', folderName: 'Contracts / NDA', roles: [{ name: 'Signer' }] });
    const [area] = template.fields[0].areas;
    expect(area.page).toBe(0);
    expect(area.attachmentUuid).toBe(template.documents[0].uuid);
    // documenso-a4-size.pdf is A4 (595.3 × 841.9 points or so): compare to the stored page size.
    const file = await t.db.storedFile.findFirstOrThrow({
      where: { templateDocuments: { some: { uuid: area.attachmentUuid } } },
    });
    const [page] = file.pages as { width: number; height: number }[];
    expect(area.x).toBeCloseTo(100 / page!.width, 6);
    expect(area.y).toBeCloseTo(200 / page!.height, 6);
    expect(area.w).toBeCloseTo(150 / page!.width, 6);
    expect(area.h).toBeCloseTo(40 / page!.height, 6);
    expect(template.documents[0].pageCount).toBe(1);
  });

  it('reports bad input with extensions.code VALIDATION', async () => {
    const { body } = await graphql(t.url, CREATE, {
      key: alice.apiKey,
      variables: { input: { documents: [{ name: 'x', file: base64(Buffer.from('plain text')) }] } },
    });
    expect(body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
  });
});

describe('a template without fields', () => {
  const CREATE_WITH_WARNINGS = /* GraphQL */ `
    mutation Create($input: CreateTemplateFromFileInput!) {
      createTemplateFromPdf(input: $input) { template { id name fields { name } } warnings { code message } }
    }
  `;
  const CREATE_SUBMISSIONS = /* GraphQL */ `
    mutation Send($input: CreateSubmissionsInput!) { createSubmissions(input: $input) { submissions { id } } }
  `;

  it(
    'is created with a TEMPLATE_HAS_NO_FIELDS warning (none when it has fields); ' +
      'createSubmissions then fails with VALIDATION naming it',
    async () => {
      const file = base64(fixturePdf('documenso-a4-size.pdf'));
      const blank = await graphql(t.url, CREATE_WITH_WARNINGS, {
        key: alice.apiKey,
        variables: { input: { name: 'Blank', documents: [{ name: 'doc', file }] } },
      });
      expect(blank.body.errors, JSON.stringify(blank.body.errors)).toBeUndefined();
      const { template, warnings } = blank.body.data.createTemplateFromPdf;
      expect(template.fields).toEqual([]);
      expect(warnings).toEqual([
        { code: 'TEMPLATE_HAS_NO_FIELDS', message: expect.stringContaining('The template has no fields') },
      ]);

      const withFields = await graphql(t.url, CREATE_WITH_WARNINGS, {
        key: alice.apiKey,
        variables: {
          input: {
            name: 'Signed',
            documents: [{ name: 'doc', file }],
            fields: [
              { name: 'Sign', type: 'signature', role: 'Signer', areas: [{ x: 100, y: 200, w: 150, h: 40, page: 1 }] },
            ],
          },
        },
      });
      expect(withFields.body.data.createTemplateFromPdf.warnings).toEqual([]);

      const refused = await graphql(t.url, CREATE_SUBMISSIONS, {
        key: alice.apiKey,
        variables: { input: { templateId: template.id, sendEmail: false, submitters: [{ email: 'a@example.test' }] } },
      });
      expect(refused.body.errors?.[0]).toMatchObject({
        message:
          `Template does not contain fields: template ${template.id} ("Blank") has no fields to fill in or ` +
          `sign; add fields to it before creating submissions.`,
        extensions: { code: 'VALIDATION' },
      });
    },
  );
});

describe('templates and template', () => {
  it('lists only the caller account, in a constant number of queries', async () => {
    const LIST =
      '{ templates(limit: 100) { nodes { id name folderName author { email } documents { url previewImageUrl } } ' +
      'pagination { count next prev } } }';
    const carol = await t.createAccount({ email: 'carol@gql-templates.test' });
    await createTemplate(carol.apiKey, 'One', 'F1');
    await graphql(t.url, LIST, { key: carol.apiKey });
    await t.resetQueries();
    const one = await graphql(t.url, LIST, { key: carol.apiKey });
    await t.settleQueries();
    const reads = () => t.queries.filter((sql) => /^\s*SELECT/i.test(sql)).length;
    const withOne = reads();
    expect(one.body.data.templates.nodes).toHaveLength(1);
    await createTemplate(carol.apiKey, 'Two', 'F2');
    await createTemplate(carol.apiKey, 'Three', 'F3 / Sub');
    await t.resetQueries();
    const three = await graphql(t.url, LIST, { key: carol.apiKey });
    await t.settleQueries();
    expect(three.body.data.templates.nodes.map((n: { name: string }) => n.name)).toEqual(['One', 'Two', 'Three']);
    expect(three.body.data.templates.nodes.map((n: { folderName: string }) => n.folderName)).toEqual([
      'F1',
      'F2',
      'F3 / Sub',
    ]);
    // Folder names load level by level: one more query for the nested folder's parent.
    expect(reads()).toBeLessThanOrEqual(withOne + 1);
  });

  it('template(id) of another account is FORBIDDEN, an unknown id NOT_FOUND', async () => {
    const template = await createTemplate(alice.apiKey, 'Private');
    const foreign = await graphql(t.url, `{ template(id: ${template.id}) { id } }`, { key: bob.apiKey });
    expect(foreign.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unknown = await graphql(t.url, '{ template(id: 987654) { id } }', { key: bob.apiKey });
    expect(unknown.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('updates, archives and clones', async () => {
    const template = await createTemplate(alice.apiKey, 'Editable');
    const updated = await graphql(
      t.url,
      `mutation { updateTemplate(input: {id: ${template.id}, name: "Edited", roles: ["Client"]}) { template { name ` +
        `roles { name } } } }`,
      { key: alice.apiKey },
    );
    expect(updated.body.data.updateTemplate.template).toEqual({ name: 'Edited', roles: [{ name: 'Client' }] });
    const cloned = await graphql(
      t.url,
      `mutation { cloneTemplate(input: {id: ${template.id}}) { template { id name } } }`,
      { key: alice.apiKey },
    );
    expect(cloned.body.data.cloneTemplate.template.name).toBe('Edited (Clone)');
    const archived = await graphql(
      t.url,
      `mutation { archiveTemplate(input: {id: ${template.id}}) { template { archivedAt } } }`,
      { key: alice.apiKey },
    );
    expect(archived.body.data.archiveTemplate.template.archivedAt).toMatch(/Z$/);
    const listed = await graphql(t.url, '{ templates(archived: true, limit: 100) { nodes { id } } }', {
      key: alice.apiKey,
    });
    expect(listed.body.data.templates.nodes.map((n: { id: number }) => n.id)).toContain(template.id);
  });
});
