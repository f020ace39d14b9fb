/**
 * Submissions over GraphQL: createSubmissions, the lists with filters, single records, tenant
 * scoping with typed errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@gql-submissions.test' });
  bob = await t.createAccount({ email: 'bob@gql-submissions.test' });
  const { body } = await graphql(
    t.url,
    `mutation ($input: CreateTemplateFromFileInput!) { createTemplateFromPdf(input: $input) { template { id } } }`,
    {
      key: alice.apiKey,
      variables: {
        input: {
          name: 'GraphQL agreement',
          documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
          fields: [
            { name: 'Client Name', role: 'Client', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] },
            {
              name: 'Agent Signature',
              type: 'signature',
              role: 'Agent',
              areas: [{ x: 72, y: 200, w: 150, h: 40, page: 1 }],
            },
          ],
        },
      },
    },
  );
  templateId = body.data.createTemplateFromPdf.template.id;
});
afterAll(async () => {
  await t?.close();
});

const CREATE = /* GraphQL */ `
  mutation ($input: CreateSubmissionsInput!) {
    createSubmissions(input: $input) {
      submissions { id status submittersOrder template { id } submitters { id role status } }
      submitters { id email role status values embedSrc }
    }
  }
`;

describe('createSubmissions', () => {
  it('creates with typed input and returns submissions and submitters', async () => {
    const { body } = await graphql(t.url, CREATE, {
      key: alice.apiKey,
      variables: {
        input: {
          templateId,
          submitters: [
            { role: 'Client', email: 'carla@example.test', values: { 'Client Name': 'Carla' } },
            { role: 'Agent', email: 'agent@example.test' },
          ],
        },
      },
    });
    expect(body.errors).toBeUndefined();
    const { submissions, submitters } = body.data.createSubmissions;
    expect(submissions[0]).toMatchObject({
      status: 'pending',
      submittersOrder: 'preserved',
      template: { id: templateId },
    });
    expect(submitters.map((s: { role: string; status: string }) => [s.role, s.status])).toEqual([
      ['Client', 'sent'],
      ['Agent', 'awaiting'],
    ]);
    expect(submitters[0].values).toEqual([{ field: 'Client Name', value: 'Carla' }]);
  });

  it('reports DocuSeal’s validation messages with extensions.code VALIDATION', async () => {
    const { body } = await graphql(t.url, CREATE, {
      key: alice.apiKey,
      variables: { input: { templateId, submitters: [{ role: 'Client' }] } },
    });
    expect(body.errors?.[0]).toMatchObject({
      message: 'email or phone or name is required in `submitters[0]`.',
      extensions: { code: 'VALIDATION' },
    });
  });

  it('is scoped to the account', async () => {
    const { body } = await graphql(t.url, CREATE, {
      key: bob.apiKey,
      variables: { input: { templateId, submitters: [{ email: 'x@example.test' }] } },
    });
    expect(body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});

describe('queries', () => {
  it('lists submissions and submitters with filters; another account sees nothing', async () => {
    const list = await graphql(
      t.url,
      `{ submissions(q: "carla", limit: 10) { nodes { id submitters { email } } pagination { count next prev } } }`,
      { key: alice.apiKey },
    );
    expect(list.body.data.submissions.nodes).toHaveLength(1);
    expect(list.body.data.submissions.pagination.count).toBe(1);
    const submissionId = list.body.data.submissions.nodes[0].id;
    const one = await graphql(
      t.url,
      `{ submission(id: ${submissionId}) { id events { eventType } submitters { role } } }`,
      { key: alice.apiKey },
    );
    expect(one.body.data.submission.submitters.map((s: { role: string }) => s.role)).toEqual(['Client', 'Agent']);
    const submitters = await graphql(
      t.url,
      `{ submitters(submissionId: ${submissionId}) { nodes { id email status } } }`,
      { key: alice.apiKey },
    );
    expect(submitters.body.data.submitters.nodes).toHaveLength(2);
    const foreign = await graphql(t.url, `{ submission(id: ${submissionId}) { id } }`, { key: bob.apiKey });
    expect(foreign.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const empty = await graphql(t.url, `{ submissions { nodes { id } } submitters { nodes { id } } }`, {
      key: bob.apiKey,
    });
    expect(empty.body.data).toEqual({ submissions: { nodes: [] }, submitters: { nodes: [] } });
  });

  it('updates and archives through mutations', async () => {
    const created = await graphql(t.url, CREATE, {
      key: alice.apiKey,
      variables: { input: { templateId, submitters: [{ email: 'm@example.test' }] } },
    });
    const id = created.body.data.createSubmissions.submissions[0].id;
    const updated = await graphql(
      t.url,
      `mutation { updateSubmission(input: {id: ${id}, name: "Q3", archived: true}) { submission { name archivedAt } ` +
        `} }`,
      { key: alice.apiKey },
    );
    expect(updated.body.data.updateSubmission.submission).toMatchObject({
      name: 'Q3',
      archivedAt: expect.stringMatching(/Z$/),
    });
    const submitterId = created.body.data.createSubmissions.submitters[0].id;
    const done = await graphql(
      t.url,
      `mutation { updateSubmitter(input: {id: ${submitterId}, completed: true}) { submitter { status } } }`,
      { key: alice.apiKey },
    );
    expect(done.body.data.updateSubmitter.submitter.status).toBe('completed');
  });
});
