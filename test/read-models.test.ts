/**
 * The domain read-model loaders (src/submissions/read-models.ts, src/templates/read-models.ts)
 * give exactly what the GraphQL fragments of src/docuseal-shapes/ give for the same records, so
 * the webhooks (which load without GraphQL) and the REST answers agree by construction: list
 * items, GET submissions, form submitters and templates, on a template in a nested folder, with
 * submissions pending, completed by both parties (signed documents, audit log, a drawn
 * signature) and declined. Also: answers in request order, repeated ids, unknown ids and another
 * account's records as null, and a constant number of queries per page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { SUBMISSION_GET_FRAGMENT, SUBMISSION_LIST_FRAGMENT } from '../src/docuseal-shapes/submission.ts';
import { TEMPLATE_FRAGMENT } from '../src/docuseal-shapes/template.ts';
import { FORM_SUBMITTER_FRAGMENT } from '../src/docuseal-shapes/webhook-data.ts';
import {
  loadFormSubmitterReadModels,
  loadSubmissionArchivedAt,
  loadSubmissionGetReadModels,
  loadSubmissionListReadModels,
} from '../src/submissions/read-models.ts';
import { loadTemplateArchivedAt, loadTemplateReadModels } from '../src/templates/read-models.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { strokePng } from './helpers/images.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;
let bobTemplateId: number;
const submissionIds: number[] = [];
const submitterIds: number[] = [];
let bobSubmissionId: number;

const api = (method: string, path: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, path, body);

async function ok(method: string, path: string, body?: unknown, key?: string) {
  const { status, json } = await api(method, path, body, key);
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

async function gql(query: string, variables: Record<string, unknown> = {}, key = alice.apiKey) {
  const { body } = await graphql(t.url, query, { key, variables });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
}

/** Signed URL tokens embed their expiry (whole seconds): compared without them. */
const withoutTokens = (value: unknown) => JSON.parse(JSON.stringify(value).replace(/\/file\/[^/"]+\//g, '/file/T/'));

const deps = () => ({ db: t.db, files: t.app.files.signer });

async function uploadSignature(slug: string): Promise<string> {
  const body = new FormData();
  body.append('submitter_slug', slug);
  body.append('type', 'signature');
  body.append('file', new Blob([new Uint8Array(await strokePng(160, 50))], { type: 'image/png' }), 'signature.png');
  const response = await fetch(`${t.url}/api/attachments`, { method: 'POST', body });
  expect(response.status).toBe(200);
  return ((await response.json()) as { uuid: string }).uuid;
}

const FORM = 'fragment Form on SigningForm { slug }';
async function signing(operation: string, variables: Record<string, unknown>) {
  const { body } = await graphql(t.url, `${operation}\n${FORM}`, { variables });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@read-models.test' });
  bob = await t.createAccount({ email: 'bob@read-models.test' });
  const template = await ok('POST', '/templates/pdf', {
    name: 'Lease',
    folder_name: 'Clients / 2026',
    external_id: 'lease-1',
    documents: [{ name: 'lease', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Tenant Name', role: 'Tenant', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] },
      {
        name: 'Plan',
        type: 'radio',
        role: 'Tenant',
        options: ['Basic', 'Pro'],
        areas: [
          { x: 72, y: 150, w: 20, h: 20, page: 1, option: 'Basic' },
          { x: 110, y: 150, w: 20, h: 20, page: 1, option: 'Pro' },
        ],
      },
      {
        name: 'Notes',
        role: 'Tenant',
        readonly: true,
        default_value: 'Fixed',
        areas: [{ x: 72, y: 230, w: 200, h: 24, page: 1 }],
      },
      { name: 'Sign', type: 'signature', role: 'Tenant', areas: [{ x: 72, y: 270, w: 200, h: 50, page: 1 }] },
      { name: 'Landlord Name', role: 'Landlord', areas: [{ x: 72, y: 400, w: 150, h: 24, page: 1 }] },
    ],
  });
  templateId = template.id;
  const fieldUuid = (name: string) => template.fields.find((f: { name: string }) => f.name === name).uuid;
  const create = async () => {
    const created = await ok('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        { role: 'Tenant', email: 'tina@read-models.test', name: 'Tina', metadata: { crm: 1 } },
        { role: 'Landlord', email: 'lou@read-models.test' },
      ],
    });
    submissionIds.push(created[0].submission_id);
    submitterIds.push(created[0].id, created[1].id);
    return created as { slug: string }[];
  };
  await create(); // pending
  const [tenant, landlord] = await create(); // completed by both
  await signing('mutation ($slug: String!) { openSigningForm(slug: $slug) { ...Form } }', { slug: tenant!.slug });
  const values = {
    [fieldUuid('Tenant Name')]: 'Tina T',
    [fieldUuid('Plan')]: 'Pro',
    [fieldUuid('Sign')]: await uploadSignature(tenant!.slug),
  };
  await acceptConsentViaApi(t.url, tenant!.slug);
  await signing(
    'mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { ...Form } }',
    {
      slug: tenant!.slug,
      values,
    },
  );
  await acceptConsentViaApi(t.url, landlord!.slug);
  await signing(
    'mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { ...Form } }',
    {
      slug: landlord!.slug,
      values: { [fieldUuid('Landlord Name')]: 'Lou' },
    },
  );
  const [declining] = await create(); // declined
  await signing('mutation ($slug: String!) { declineSigningForm(slug: $slug, reason: "No") { ...Form } }', {
    slug: declining!.slug,
  });
  await t.outboxRelayed(30_000);
  await t.jobs.waitForIdle({ timeoutMs: 120_000 });

  const bobTemplate = await ok(
    'POST',
    '/templates/pdf',
    {
      name: 'Other',
      documents: [{ name: 'other', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [{ name: 'Name', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] }],
    },
    bob.apiKey,
  );
  bobTemplateId = bobTemplate.id;
  const bobCreated = await ok(
    'POST',
    '/submissions',
    { template_id: bobTemplateId, send_email: false, submitters: [{ role: 'Signer', email: 's@bob.test' }] },
    bob.apiKey,
  );
  bobSubmissionId = bobCreated[0].submission_id;
}, 240_000);

afterAll(async () => {
  await t?.close();
});

describe('read-model loaders', { timeout: 120_000 }, () => {
  it('the fixture has a completed submission with documents, an audit log and a drawn signature', async () => {
    const [completed] = await loadSubmissionGetReadModels(deps(), {
      accountId: alice.accountId,
      ids: [submissionIds[1]!],
    });
    expect(completed!.status).toBe('completed');
    expect(completed!.documents).toHaveLength(1);
    expect(completed!.auditLogUrl).toMatch(/\/file\//);
    expect(JSON.stringify(completed!.submitters[0]!.values)).toMatch(/\/file\/[^"]+\/signature\.png/);
    expect(completed!.template!.folderName).toBe('Clients / 2026');
  });

  it('list items equal the RestSubmissionList fragment', async () => {
    const models = await loadSubmissionListReadModels(deps(), { accountId: alice.accountId, ids: submissionIds });
    for (const [i, id] of submissionIds.entries()) {
      const data = await gql(
        `query ($id: Int!) { submission(id: $id) { ...RestSubmissionList } } ${SUBMISSION_LIST_FRAGMENT}`,
        {
          id,
        },
      );
      expect(withoutTokens(models[i])).toEqual(withoutTokens(data.submission));
    }
  });

  it('GET submissions equal the RestSubmissionGet fragment', async () => {
    const models = await loadSubmissionGetReadModels(deps(), { accountId: alice.accountId, ids: submissionIds });
    for (const [i, id] of submissionIds.entries()) {
      const data = await gql(
        `query ($id: Int!) { submission(id: $id) { ...RestSubmissionGet } } ${SUBMISSION_GET_FRAGMENT}`,
        {
          id,
        },
      );
      expect(withoutTokens(models[i])).toEqual(withoutTokens(data.submission));
    }
  });

  it('form submitters equal the WebhookFormSubmitter fragment', async () => {
    const models = await loadFormSubmitterReadModels(deps(), { accountId: alice.accountId, ids: submitterIds });
    for (const [i, id] of submitterIds.entries()) {
      const data = await gql(
        `query ($id: Int!) { submitter(id: $id) { ...WebhookFormSubmitter } } ${FORM_SUBMITTER_FRAGMENT}`,
        {
          id,
        },
      );
      expect(withoutTokens(models[i])).toEqual(withoutTokens(data.submitter));
    }
  });

  it('templates equal the RestTemplate fragment (nested folder, previews, options, readonly)', async () => {
    const [model] = await loadTemplateReadModels(deps(), { accountId: alice.accountId, ids: [templateId] });
    const data = await gql(`query ($id: Int!) { template(id: $id) { ...RestTemplate } } ${TEMPLATE_FRAGMENT}`, {
      id: templateId,
    });
    expect(withoutTokens(model)).toEqual(withoutTokens(data.template));
    expect(model!.folderName).toBe('Clients / 2026');
  });

  it('answers in request order, repeated ids too; null for unknown ids and other accounts’ records', async () => {
    const scope = (ids: number[]) => ({ accountId: alice.accountId, ids });
    const ids = [submissionIds[2]!, 999_999, submissionIds[0]!, bobSubmissionId, submissionIds[2]!];
    const list = await loadSubmissionListReadModels(deps(), scope(ids));
    expect(list.map((s) => s?.id ?? null)).toEqual([submissionIds[2], null, submissionIds[0], null, submissionIds[2]]);
    const get = await loadSubmissionGetReadModels(deps(), scope(ids));
    expect(get.map((s) => s?.id ?? null)).toEqual([submissionIds[2], null, submissionIds[0], null, submissionIds[2]]);
    const archived = await loadSubmissionArchivedAt(deps(), scope(ids));
    expect(archived.map((s) => s?.id ?? null)).toEqual([
      submissionIds[2],
      null,
      submissionIds[0],
      null,
      submissionIds[2],
    ]);
    const bobSubmitter = await t.db.submitter.findFirstOrThrow({ where: { submissionId: bobSubmissionId } });
    const forms = await loadFormSubmitterReadModels(deps(), scope([bobSubmitter.id, submitterIds[1]!, 999_999]));
    expect(forms.map((s) => s?.id ?? null)).toEqual([null, submitterIds[1], null]);
    const templates = await loadTemplateReadModels(deps(), scope([bobTemplateId, templateId, 999_999]));
    expect(templates.map((x) => x?.id ?? null)).toEqual([null, templateId, null]);
    const templatesArchived = await loadTemplateArchivedAt(deps(), scope([bobTemplateId, templateId]));
    expect(templatesArchived).toEqual([null, { id: templateId, archivedAt: null }]);
    expect(await loadSubmissionListReadModels(deps(), scope([]))).toEqual([]);
  });

  it('makes the same number of queries for one submission as for a page of them', async () => {
    const count = async (ids: number[]) => {
      await t.resetQueries();
      await loadSubmissionGetReadModels(deps(), { accountId: alice.accountId, ids });
      await t.settleQueries();
      return t.queries.length;
    };
    const one = await count([submissionIds[1]!]);
    expect(await count(submissionIds)).toBe(one);
  });
});
