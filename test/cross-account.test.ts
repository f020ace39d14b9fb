/**
 * 403 vs 404 on every id-taking route (issue 12 §4, docs/security.md "Credentials, CORS and file
 * URLs", docs/compatibility.md "Errors"): an id that names another account's record answers 403
 * `{"error":"Not authorized"}` (GraphQL FORBIDDEN), an id that names nothing 404
 * `{"error":"<Model> <id> not found"}` (NOT_FOUND) — on REST routes (path, body and query-filter
 * ids) and on every GraphQL query, mutation and subscription that takes an id, filters included —
 * and nothing is changed or created by the refused call.
 *
 * The case lists are checked against the route table and the schema, so a new id-taking route or
 * field fails here until it has its case.
 */
import {
  getNamedType,
  isInputObjectType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restRoutes } from '../rest-compat/index.ts';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { schema } from '../src/graphql/schema/index.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { makeP12 } from './helpers/certificates.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { subscribeSse } from './helpers/subscriptions.ts';

/** An id no record has. */
const UNKNOWN = 987_654_321;

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
/** Alice's records, which Bob probes. */
let mine: {
  template: number;
  submission: number;
  submitter: number;
  endpoint: number;
  delivery: number;
  apiKey: number;
  bulkSend: number;
  signingCertificate: number;
};
let bobTemplate: number;

async function createTemplate(account: CreatedAccount, name: string): Promise<number> {
  const created = await rest(t.url, account.apiKey, 'POST', '/templates/pdf', {
    name,
    documents: [{ name: 'form', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return created.json.id;
}

beforeAll(async () => {
  // Alice's webhook endpoint points at a closed loopback port, which adding a URL refuses unless allowed.
  t = await startTestApp({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  alice = await t.createAccount({ name: 'Alice' });
  bob = await t.createAccount({ name: 'Bob' });
  const template = await createTemplate(alice, 'Alice form');
  bobTemplate = await createTemplate(bob, 'Bob form');
  const created = await rest(t.url, alice.apiKey, 'POST', '/submissions', {
    template_id: template,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@alice.test', name: 'Client' }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  const endpoint = await graphql(
    t.url,
    'mutation { createWebhookEndpoint(input: {url: "http://127.0.0.1:9/alice"}) { endpoint { id } } }',
    { key: alice.apiKey },
  );
  expect(endpoint.body.errors).toBeUndefined();
  const endpointId = endpoint.body.data.createWebhookEndpoint.endpoint.id as number;
  const delivery = await t.db.webhookDelivery.create({
    data: {
      accountId: alice.accountId,
      endpointId,
      eventType: 'form.viewed',
      recordType: 'Submitter',
      recordId: created.json[0].id,
      payload: {},
    },
  });
  const bulk = await rest(t.url, alice.apiKey, 'POST', `/templates/${template}/submissions/bulk`, {
    csv: 'Email\nbulk@alice.test\n',
    send_email: false,
  });
  expect(bulk.status, JSON.stringify(bulk.json)).toBe(202);
  // An own signing certificate (docs/signatures.md), for revokeSigningCertificate.
  const certificate = await graphql(
    t.url,
    'mutation ($input: UploadSigningCertificateInput!) { uploadSigningCertificate(input: $input) { id } }',
    {
      key: alice.apiKey,
      variables: {
        input: {
          file: makeP12({ commonName: 'Alice', password: 'pw', toDays: 365 }).p12.toString('base64'),
          password: 'pw',
        },
      },
    },
  );
  expect(certificate.body.errors).toBeUndefined();
  mine = {
    signingCertificate: certificate.body.data.uploadSigningCertificate.id as number,
    template,
    submission: created.json[0].submission_id,
    submitter: created.json[0].id,
    endpoint: endpointId,
    delivery: delivery.id,
    apiKey: alice.apiKeyId,
    bulkSend: bulk.json.id,
  };
}, 120_000);

afterAll(async () => {
  await t?.close();
});

type Ids = typeof mine;
const unknownIds = (): Ids => ({
  signingCertificate: UNKNOWN,
  template: UNKNOWN,
  submission: UNKNOWN,
  submitter: UNKNOWN,
  endpoint: UNKNOWN,
  delivery: UNKNOWN,
  apiKey: UNKNOWN,
  bulkSend: UNKNOWN,
});

interface RestCase {
  method: string;
  /** Fastify path of the route (as in rest-compat's route table). */
  route: string;
  path: (ids: Ids) => string;
  body?: (ids: Ids) => unknown;
}

const submitters = [{ role: 'Client', email: 'probe@bob.test' }];

/** Every REST route that takes an id: in its path, its body or a query filter. */
const REST_CASES: RestCase[] = [
  { method: 'GET', route: '/templates/:id', path: (i) => `/templates/${i.template}` },
  { method: 'PUT', route: '/templates/:id', path: (i) => `/templates/${i.template}`, body: () => ({ name: 'Probed' }) },
  {
    method: 'PATCH',
    route: '/templates/:id',
    path: (i) => `/templates/${i.template}`,
    body: () => ({ name: 'Probed' }),
  },
  { method: 'DELETE', route: '/templates/:id', path: (i) => `/templates/${i.template}` },
  { method: 'DELETE', route: '/templates/:id', path: (i) => `/templates/${i.template}?permanently=true` },
  {
    method: 'POST',
    route: '/templates/:id/clone',
    path: (i) => `/templates/${i.template}/clone`,
    body: () => ({ name: 'Copy' }),
  },
  {
    method: 'PUT',
    route: '/templates/:id/documents',
    path: (i) => `/templates/${i.template}/documents`,
    body: () => ({ documents: [{ name: 'form', remove: true }] }),
  },
  {
    method: 'POST',
    route: '/templates/merge',
    path: () => '/templates/merge',
    body: (i) => ({ template_ids: [bobTemplate, i.template] }),
  },
  {
    method: 'POST',
    route: '/templates/:id/submissions',
    path: (i) => `/templates/${i.template}/submissions`,
    body: () => ({ send_email: false, submitters }),
  },
  { method: 'GET', route: '/templates/:id/submissions', path: (i) => `/templates/${i.template}/submissions` },
  {
    method: 'POST',
    route: '/submissions',
    path: () => '/submissions',
    body: (i) => ({ template_id: i.template, send_email: false, submitters }),
  },
  {
    method: 'POST',
    route: '/submissions/init',
    path: () => '/submissions/init',
    body: (i) => ({ template_id: i.template, send_email: false, submitters }),
  },
  {
    method: 'POST',
    route: '/submissions/emails',
    path: () => '/submissions/emails',
    body: (i) => ({ template_id: i.template, send_email: false, emails: 'probe@bob.test' }),
  },
  {
    method: 'POST',
    route: '/submissions/bulk',
    path: () => '/submissions/bulk',
    body: (i) => ({ template_id: i.template, send_email: false, csv: 'Email\nprobe@bob.test\n' }),
  },
  {
    method: 'POST',
    route: '/templates/:id/submissions/bulk',
    path: (i) => `/templates/${i.template}/submissions/bulk`,
    body: () => ({ send_email: false, csv: 'Email\nprobe@bob.test\n' }),
  },
  { method: 'GET', route: '/submissions/bulk/:id', path: (i) => `/submissions/bulk/${i.bulkSend}` },
  { method: 'GET', route: '/submissions', path: (i) => `/submissions?template_id=${i.template}` },
  { method: 'GET', route: '/submissions/:id', path: (i) => `/submissions/${i.submission}` },
  { method: 'GET', route: '/submissions/:id/documents', path: (i) => `/submissions/${i.submission}/documents` },
  {
    method: 'PUT',
    route: '/submissions/:id',
    path: (i) => `/submissions/${i.submission}`,
    body: () => ({ name: 'Probed' }),
  },
  {
    method: 'PATCH',
    route: '/submissions/:id',
    path: (i) => `/submissions/${i.submission}`,
    body: () => ({ archived: true }),
  },
  { method: 'DELETE', route: '/submissions/:id', path: (i) => `/submissions/${i.submission}` },
  { method: 'DELETE', route: '/submissions/:id', path: (i) => `/submissions/${i.submission}?permanently=true` },
  { method: 'GET', route: '/submitters', path: (i) => `/submitters?submission_id=${i.submission}` },
  { method: 'GET', route: '/submitters', path: (i) => `/submitters?template_id=${i.template}` },
  { method: 'GET', route: '/submitters/:id', path: (i) => `/submitters/${i.submitter}` },
  {
    method: 'PUT',
    route: '/submitters/:id',
    path: (i) => `/submitters/${i.submitter}`,
    body: () => ({ name: 'Probed' }),
  },
  {
    method: 'PATCH',
    route: '/submitters/:id',
    path: (i) => `/submitters/${i.submitter}`,
    body: () => ({ completed: true }),
  },
];

interface GraphQLCase {
  /** The Query, Mutation or Subscription field. */
  field: string;
  query: string;
  variables: (ids: Ids) => Record<string, unknown>;
  subscription?: boolean;
}

/** Every GraphQL field that takes an id (as an argument or in its input), filters included. */
const GRAPHQL_CASES: GraphQLCase[] = [
  {
    field: 'template',
    query: 'query ($id: Int!) { template(id: $id) { id } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'submission',
    query: 'query ($id: Int!) { submission(id: $id) { id } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'submissionDocuments',
    query: 'query ($id: Int!) { submissionDocuments(id: $id) { id } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'submitter',
    query: 'query ($id: Int!) { submitter(id: $id) { id } }',
    variables: (i) => ({ id: i.submitter }),
  },
  {
    field: 'submissions',
    query: 'query ($id: Int) { submissions(templateId: $id) { ids } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'submitters',
    query: 'query ($id: Int) { submitters(submissionId: $id) { nodes { id } } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'submitters',
    query: 'query ($id: Int) { submitters(templateId: $id) { nodes { id } } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'webhookEndpoint',
    query: 'query ($id: Int!) { webhookEndpoint(id: $id) { id } }',
    variables: (i) => ({ id: i.endpoint }),
  },
  {
    field: 'webhookDelivery',
    query: 'query ($id: Int!) { webhookDelivery(id: $id) { id } }',
    variables: (i) => ({ id: i.delivery }),
  },
  {
    field: 'webhookDeliveries',
    query: 'query ($id: Int) { webhookDeliveries(endpointId: $id) { id } }',
    variables: (i) => ({ id: i.endpoint }),
  },
  {
    field: 'webhookDeliveries',
    query: 'query ($id: Int) { webhookDeliveries(recordType: "Submitter", recordId: $id) { id } }',
    variables: (i) => ({ id: i.submitter }),
  },
  {
    field: 'webhookDeliveries',
    query: 'query ($id: Int) { webhookDeliveries(recordType: "Submission", recordId: $id) { id } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'webhookDeliveries',
    query: 'query ($id: Int) { webhookDeliveries(recordType: "Template", recordId: $id) { id } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'webhookDeliveries',
    query: 'query ($id: Int) { webhookDeliveries(recordId: $id) { id } }',
    variables: (i) => ({ id: i.submitter }),
  },
  {
    field: 'updateTemplate',
    query: 'mutation ($id: Int!) { updateTemplate(input: {id: $id, name: "Probed"}) { template { id } } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'archiveTemplate',
    query: 'mutation ($id: Int!) { archiveTemplate(input: {id: $id}) { template { id } } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'deleteTemplate',
    query: 'mutation ($id: Int!) { deleteTemplate(input: {id: $id}) { id } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'cloneTemplate',
    query: 'mutation ($id: Int!) { cloneTemplate(input: {id: $id}) { template { id } } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'updateTemplateDocuments',
    query:
      'mutation ($id: Int!) { updateTemplateDocuments(input: {id: $id, documents: [{name: "form", remove: true}]}) ' +
      '{ template { id } } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'mergeTemplates',
    query: 'mutation ($ids: [Int!]!) { mergeTemplates(input: {templateIds: $ids}) { template { id } } }',
    variables: (i) => ({ ids: [bobTemplate, i.template] }),
  },
  {
    field: 'createSubmissions',
    query:
      'mutation ($id: Int!) { createSubmissions(input: {templateId: $id, sendEmail: false, submitters: [{role: ' +
      '"Client", email: "probe@bob.test"}]}) { submissionIds } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'createBulkSend',
    query:
      'mutation ($id: Int!) { createBulkSend(input: {templateId: $id, sendEmail: false, ' +
      'csv: "Email\\nprobe@bob.test"}) { bulkSend { id } } }',
    variables: (i) => ({ id: i.template }),
  },
  {
    field: 'bulkSend',
    query: 'query ($id: Int!) { bulkSend(id: $id) { id } }',
    variables: (i) => ({ id: i.bulkSend }),
  },
  {
    field: 'bulkSendProgress',
    query: 'subscription ($id: Int!) { bulkSendProgress(id: $id) { id } }',
    variables: (i) => ({ id: i.bulkSend }),
    subscription: true,
  },
  ...(['Pdf', 'Docx', 'Html'] as const).map((kind) => ({
    field: `createSubmissionFrom${kind}`,
    // The templates of `templateIds` are checked before the documents are read.
    query:
      `mutation ($ids: [Int!]!) { createSubmissionFrom${kind}(input: {templateIds: $ids, ` +
      `documents: [${kind === 'Html' ? '{html: "<p>x</p>"}' : '{name: "x", file: "x"}'}], ` +
      'submitters: [{email: "probe@bob.test"}]}) { submissionIds } }',
    variables: (i: Ids) => ({ ids: [i.template] }),
  })),
  {
    field: 'updateSubmission',
    query: 'mutation ($id: Int!) { updateSubmission(input: {id: $id, name: "Probed"}) { submission { id } } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'archiveSubmission',
    query: 'mutation ($id: Int!) { archiveSubmission(input: {id: $id}) { submission { id } } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'deleteSubmission',
    query: 'mutation ($id: Int!) { deleteSubmission(input: {id: $id}) { id } }',
    variables: (i) => ({ id: i.submission }),
  },
  {
    field: 'updateSubmitter',
    query: 'mutation ($id: Int!) { updateSubmitter(input: {id: $id, name: "Probed"}) { submitter { id } } }',
    variables: (i) => ({ id: i.submitter }),
  },
  {
    field: 'updateWebhookEndpoint',
    query:
      'mutation ($id: Int!) { updateWebhookEndpoint(input: {id: ' +
      '$id, url: "https://evil.example/x"}) { endpoint { id } } }',
    variables: (i) => ({ id: i.endpoint }),
  },
  {
    field: 'deleteWebhookEndpoint',
    query: 'mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }',
    variables: (i) => ({ id: i.endpoint }),
  },
  {
    field: 'rotateWebhookSecret',
    query: 'mutation ($id: Int!) { rotateWebhookSecret(input: {id: $id}) { secret } }',
    variables: (i) => ({ id: i.endpoint }),
  },
  {
    field: 'sendTestWebhook',
    query: 'mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { delivery { id } } }',
    variables: (i) => ({ id: i.endpoint }),
  },
  {
    field: 'redeliverWebhook',
    query: 'mutation ($id: Int!) { redeliverWebhook(input: {deliveryId: $id}) { delivery { id } } }',
    variables: (i) => ({ id: i.delivery }),
  },
  {
    field: 'revokeSigningCertificate',
    query: 'mutation ($id: Int!) { revokeSigningCertificate(id: $id) { id } }',
    variables: (i) => ({ id: i.signingCertificate }),
  },
  {
    field: 'revokeApiKey',
    query: 'mutation ($id: Int!) { revokeApiKey(input: {id: $id}) { apiKey { id } } }',
    variables: (i) => ({ id: i.apiKey }),
  },
  {
    field: 'submissionUpdated',
    query: 'subscription ($id: Int!) { submissionUpdated(id: $id) { eventType } }',
    variables: (i) => ({ id: i.submission }),
    subscription: true,
  },
  {
    field: 'formEvents',
    query: 'subscription ($id: Int) { formEvents(templateId: $id) { eventType } }',
    variables: (i) => ({ id: i.template }),
    subscription: true,
  },
  {
    field: 'formEvents',
    query: 'subscription ($id: Int) { formEvents(submissionId: $id) { eventType } }',
    variables: (i) => ({ id: i.submission }),
    subscription: true,
  },
];

/** `externalId` is the caller's own key for a record, not a Signet id. */
const idName = (name: string) => name === 'id' || (/Ids?$/.test(name) && name !== 'externalId');
/** An argument or (one level down) an input field that names a record by id. */
function takesId(field: GraphQLField<unknown, unknown>): boolean {
  const named = (arg: GraphQLArgument | GraphQLInputField): boolean => {
    if (idName(arg.name)) return true;
    const type = getNamedType(arg.type);
    return isInputObjectType(type) && Object.values(type.getFields()).some((f) => idName(f.name));
  };
  return field.args.some(named);
}

describe('the case lists', () => {
  it('cover every REST route with an id in its path', () => {
    const covered = new Set(REST_CASES.map((c) => `${c.method} ${c.route}`));
    const withId = restRoutes
      .filter((r) => r.path.includes(':id'))
      .flatMap((r) => [r.method].flat().map((m) => `${m} ${r.path}`));
    expect(withId.filter((route) => !covered.has(route))).toEqual([]);
  });

  it('cover every GraphQL query, mutation and subscription that takes an id', () => {
    const covered = new Set(GRAPHQL_CASES.map((c) => c.field));
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()];
    const withId = roots.flatMap((root) =>
      Object.values(root?.getFields() ?? {})
        .filter(takesId)
        .map((f) => f.name),
    );
    expect(withId.length).toBeGreaterThan(20);
    expect(withId.filter((name) => !covered.has(name))).toEqual([]);
  });
});

describe("another account's id → 403, an unknown id → 404, everywhere", () => {
  it('REST: 403 {"error":"Not authorized"} and 404 {"error":"… not found"} on every id-taking route', async () => {
    const wrong: string[] = [];
    for (const c of REST_CASES) {
      for (const [ids, status] of [
        [mine, 403],
        [unknownIds(), 404],
      ] as const) {
        const path = c.path(ids);
        const { status: got, json } = await rest(t.url, bob.apiKey, c.method, path, c.body?.(ids));
        const bodyOk =
          status === 403
            ? json?.error === 'Not authorized'
            : typeof json?.error === 'string' && / not found$/.test(json.error) && json.error.includes(String(UNKNOWN));
        if (got !== status || !bodyOk)
          wrong.push(`${c.method} ${path}: ${got} ${JSON.stringify(json)?.slice(0, 120)} (expected ${status})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('GraphQL: FORBIDDEN and NOT_FOUND on every query, mutation and subscription that takes an id', async () => {
    const wrong: string[] = [];
    for (const c of GRAPHQL_CASES) {
      for (const [ids, code] of [
        [mine, 'FORBIDDEN'],
        [unknownIds(), 'NOT_FOUND'],
      ] as const) {
        let errors: { message: string; extensions?: { code?: string } }[] | undefined;
        if (c.subscription) {
          const { feed } = await subscribeSse(t.url, bob.apiKey, c.query, c.variables(ids));
          const first = await feed
            .next(5000)
            .catch((error: Error) => ({ errors: [{ message: `no error: ${error.message}` }] }));
          feed.close();
          errors = first.errors;
        } else {
          errors = (await graphql(t.url, c.query, { key: bob.apiKey, variables: c.variables(ids) })).body.errors;
        }
        if (errors?.[0]?.extensions?.code !== code)
          wrong.push(
            `${c.field} ${JSON.stringify(c.variables(ids))}: ` +
              `${JSON.stringify(errors)?.slice(0, 160)} (expected ${code})`,
          );
      }
    }
    expect(wrong).toEqual([]);
  });

  it("changed and created nothing: Alice's records are as they were, and Bob has no new record", async () => {
    const template = await t.db.template.findUniqueOrThrow({
      where: { id: mine.template },
      include: { documents: true },
    });
    expect(template).toMatchObject({ name: 'Alice form', archivedAt: null });
    expect(template.documents).toHaveLength(1);
    expect(await t.db.submission.findUniqueOrThrow({ where: { id: mine.submission } })).toMatchObject({
      archivedAt: null,
      name: null,
    });
    expect(await t.db.submitter.findUniqueOrThrow({ where: { id: mine.submitter } })).toMatchObject({
      name: 'Client',
      completedAt: null,
    });
    const endpoint = await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: mine.endpoint } });
    expect(endpoint).toMatchObject({ url: 'http://127.0.0.1:9/alice', previousSecret: null });
    expect(await t.db.webhookDelivery.count({ where: { accountId: alice.accountId } })).toBe(1);
    expect(await t.db.apiKey.findUniqueOrThrow({ where: { id: mine.apiKey } })).toMatchObject({ revokedAt: null });
    expect(await t.db.template.count({ where: { accountId: bob.accountId } })).toBe(1);
    expect(await t.db.submission.count({ where: { accountId: bob.accountId } })).toBe(0);
    expect(await t.db.bulkSend.count({ where: { accountId: bob.accountId } })).toBe(0);
    expect(await t.db.webhookDelivery.count({ where: { accountId: bob.accountId } })).toBe(0);
    // Alice's key still answers.
    expect((await rest(t.url, alice.apiKey, 'GET', '/user')).status).toBe(200);
  });
});
