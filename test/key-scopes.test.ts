/**
 * Scoped API keys on every route (issue 16 "Scoped API keys"; docs/security.md "Scoped API keys"),
 * the sibling of test/cross-account.test.ts: for every REST route the gateway registers (and the
 * multipart upload beside it) and every GraphQL query, mutation and subscription field, a read-only
 * key and a key limited to the folder "Sales" each get the right answer:
 * - the read key: what the full key gets where the operation reads (GraphQL queries and
 *   subscriptions; REST GET and the tools' POSTs), 403 `{"error": "Not authorized: this API key
 *   lacks the \"write\" scope"}` (GraphQL FORBIDDEN, `details.scope` "write") where it writes;
 * - the Sales key: its records (in "Sales / EMEA", a subfolder) answer as for the full key, an HR
 *   record 403 `Not authorized: outside the template folders of this API key` (FORBIDDEN, scope
 *   "folders"), lists without HR's records, templates made only into Sales, account-wide things
 *   (webhooks, the account's settings) refused with scope "folders".
 * The signing form's routes take a slug, not a key: any key gets what no key gets. Every case runs
 * on a real server and PostgreSQL; the case lists are checked against the route table and the
 * schema, so a new route or field fails here until it has its case. Nothing the refusals touched
 * changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restRoutes } from '../rest-compat/index.ts';
import { ATTACHMENTS_PATH } from '../rest-compat/routes/attachments.ts';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { schema } from '../src/graphql/schema/index.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { type Feed, subscribeSse, subscribeWs, wsClient } from './helpers/subscriptions.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';

const WRITE_ERROR = 'Not authorized: this API key lacks the "write" scope';
const FOLDER_ERROR = 'Not authorized: outside the template folders of this API key';

/** A template with one submission of one submitter, in one folder. */
interface RecordSet {
  template: number;
  submission: number;
  submitter: number;
  slug: string;
}

let t: TestApp;
let alice: CreatedAccount;
/** Keys of Alice's: read only (every folder); read and write, limited to "Sales". */
let reader: string;
let sales: string;
let salesKeyId: number;
/** Shared records: Sales's (in a subfolder of it) and HR's. */
let salesSet: RecordSet;
/** Another template in Sales (a merge takes two). */
let salesOther: RecordSet;
let hr: RecordSet;
let endpoint: number;
let delivery: number;

const PDF = () => base64(fixturePdf('documenso-letter-size.pdf'));
const AREA = [{ x: 72, y: 72, w: 200, h: 24, page: 1 }];
const FIELDS = [{ name: 'Name', role: 'Client', areas: AREA }];

/** A template in `folder` with one submission (one submitter), made with the full key. */
async function recordSet(folder: string): Promise<RecordSet> {
  const template = await rest(t.url, alice.apiKey, 'POST', '/templates/pdf', {
    name: `${folder} form`,
    folder_name: folder,
    documents: [{ name: 'form', file: PDF() }],
    fields: FIELDS,
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  const created = await rest(t.url, alice.apiKey, 'POST', '/submissions', {
    template_id: template.json.id,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@alice.test', name: 'Client' }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  const [submitter] = created.json;
  return {
    template: template.json.id,
    submission: submitter.submission_id,
    submitter: submitter.id,
    slug: submitter.slug,
  };
}

/** The full folder name of a template. */
async function folderOf(templateId: number): Promise<string> {
  const template = await t.db.template.findUniqueOrThrow({
    where: { id: templateId },
    select: { folder: { select: { name: true, parentFolder: { select: { name: true } } } } },
  });
  const { folder } = template;
  return folder?.parentFolder ? `${folder.parentFolder.name} / ${folder.name}` : (folder?.name ?? 'Default');
}

async function createKey(input: string): Promise<{ token: string; id: number }> {
  const created = await graphql(t.url, `mutation { createApiKey(input: ${input}) { token apiKey { id } } }`, {
    key: alice.apiKey,
  });
  expect(created.body.errors).toBeUndefined();
  return { token: created.body.data.createApiKey.token, id: created.body.data.createApiKey.apiKey.id };
}

/** A bulk send of each set's template (one row), made with the full key on first use, by template. */
const bulkSends = new Map<number, number>();
async function bulkSendOf(r: RecordSet): Promise<number> {
  const known = bulkSends.get(r.template);
  if (known !== undefined) return known;
  const started = await rest(t.url, alice.apiKey, 'POST', `/templates/${r.template}/submissions/bulk`, {
    rows: [{ Email: 'bulk@alice.test' }],
    send_email: false,
  });
  expect(started.status, JSON.stringify(started.json)).toBe(202);
  bulkSends.set(r.template, started.json.id);
  return started.json.id;
}

/** A set's template with its shared link on (/d/{slug}), by its slug. */
async function sharedLinkOf(r: RecordSet): Promise<string> {
  const { slug } = await t.db.template.update({
    where: { id: r.template },
    data: { sharedLink: true },
    select: { slug: true },
  });
  return slug;
}

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  alice = await t.createAccount({ name: 'Alice' });
  salesSet = await recordSet('Sales / EMEA');
  salesOther = await recordSet('Sales');
  hr = await recordSet('HR');
  reader = (await createKey('{name: "reader", scopes: ["read"]}')).token;
  // The REST cases name the shared sets' bulk sends (their requests are not async).
  await bulkSendOf(salesSet);
  await bulkSendOf(hr);
  const salesKey = await createKey('{name: "sales", folders: ["Sales"]}');
  sales = salesKey.token;
  salesKeyId = salesKey.id;
  // Events for the feeds: each form opened once.
  for (const slug of [salesSet.slug, hr.slug])
    expect((await rest(t.url, alice.apiKey, 'POST', '/submitter_form_views', { submitter_slug: slug })).status).toBe(
      200,
    );
  const created = await graphql(
    t.url,
    'mutation { createWebhookEndpoint(input: {url: "http://127.0.0.1:9/alice"}) { endpoint { id } } }',
    { key: alice.apiKey },
  );
  expect(created.body.errors).toBeUndefined();
  endpoint = created.body.data.createWebhookEndpoint.endpoint.id;
  delivery = (
    await t.db.webhookDelivery.create({
      data: {
        accountId: alice.accountId,
        endpointId: endpoint,
        eventType: 'form.viewed',
        recordType: 'Submitter',
        recordId: hr.submitter,
        payload: {},
      },
    })
  ).id;
}, 180_000);

afterAll(async () => {
  await t?.close();
});

/** Ids an answer lists, by kind of record. */
interface Listed {
  templates?: number[];
  submissions?: number[];
  submitters?: number[];
}

/**
 * How a key limited to folders is answered:
 * - record: the request names a record (path, body or filter): an HR one is refused, a Sales one served;
 * - list: only Sales's records are listed (`listed`);
 * - create: a template made or moved (`into`): into HR refused, into Sales (or no folder: the key's
 *   first, Sales) served;
 * - none: names no record (the user, the tools): served;
 * - public: the signing form's, by slug: no key plays a part.
 */
type Kind = 'record' | 'list' | 'create' | 'none' | 'public';

interface RestCase {
  method: string;
  /** The route as rest-compat's table has it. */
  route: string;
  kind: Kind;
  /** The request about the records of one set (record, list, none, public). */
  request?: (r: RecordSet) => { path: string; body?: unknown };
  /** The records a served answer lists (list). */
  listed?: (json: any) => Listed;
  /** The request making a template in a folder (undefined: none named), and the template it made (create). */
  into?: (folder: string | undefined, r: RecordSet) => { path: string; body?: unknown };
  createdTemplate?: (json: any, r: RecordSet) => number | Promise<number>;
  /** The folder the template is in when the request names none (null: not probed). */
  unnamed?: string | null;
  /** The create request has no folder to name (its template goes into the key's first folder). */
  noFolderName?: boolean;
  /** Served requests change the records: each gets a new Sales set. */
  changes?: boolean;
}

const submitters = [{ role: 'Client', email: 'probe@alice.test' }];
const ids = (items: { id: number }[]) => items.map((item) => item.id);
const templateCreate = (path: string, document: () => Record<string, unknown>, withFields = true) => ({
  into: (folder: string | undefined) => ({
    path,
    body: {
      name: 'Made',
      ...(folder === undefined ? {} : { folder_name: folder }),
      documents: [document()],
      ...(withFields ? { fields: FIELDS } : {}),
    },
  }),
  createdTemplate: (json: any) => json.id,
  // A key limited to folders puts it into its first folder.
  unnamed: 'Sales',
});
const docx = () => ({ name: 'letter', file: base64(makeDocx([{ paragraph: 'Letter' }])) });
const html = () => ({
  name: 'page',
  html: '<p><text-field name="Name" role="Client" style="width: 160px; height: 20px"></text-field></p>',
});
const oneOff = (path: string, document: () => Record<string, unknown>, withFields = true) => ({
  // template_ids names records (checked as such); the one-off template goes into the key's first folder.
  request: (r: RecordSet) => ({
    path,
    body: {
      documents: [document()],
      ...(withFields ? { fields: FIELDS } : {}),
      submitters,
      template_ids: [r.template],
    },
  }),
  into: () => ({ path, body: { documents: [document()], ...(withFields ? { fields: FIELDS } : {}), submitters } }),
  createdTemplate: async (json: any) =>
    (await t.db.submission.findUniqueOrThrow({ where: { id: json.id }, select: { templateId: true } })).templateId,
  unnamed: 'Sales',
  noFolderName: true,
});
const createSubmissions = (path: (r: RecordSet) => string, body: (r: RecordSet) => unknown) => ({
  request: (r: RecordSet) => ({ path: path(r), body: body(r) }),
});

/** Every REST route, each method (and more than one case where a route does more than one thing). */
const REST_CASES: RestCase[] = [
  { method: 'GET', route: '/user', kind: 'none', request: () => ({ path: '/user' }) },
  {
    method: 'GET',
    route: '/templates',
    kind: 'list',
    request: () => ({ path: '/templates?limit=100' }),
    listed: (json) => ({ templates: ids(json.data) }),
  },
  { method: 'GET', route: '/templates/:id', kind: 'record', request: (r) => ({ path: `/templates/${r.template}` }) },
  {
    method: 'POST',
    route: '/templates/merge',
    kind: 'record',
    request: (r) => ({ path: '/templates/merge', body: { template_ids: [salesSet.template, r.template] } }),
  },
  {
    method: 'POST',
    route: '/templates/merge',
    kind: 'create',
    into: (folder) => ({
      path: '/templates/merge',
      body: {
        template_ids: [salesSet.template, salesOther.template],
        ...(folder === undefined ? {} : { folder_name: folder }),
      },
    }),
    createdTemplate: (json) => json.id,
    // The first template's folder.
    unnamed: 'Sales / EMEA',
  },
  {
    method: 'PUT',
    route: '/templates/:id/documents',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}/documents`, body: { documents: [{ file: PDF() }] } }),
    changes: true,
  },
  {
    method: 'POST',
    route: '/templates/pdf',
    kind: 'create',
    ...templateCreate('/templates/pdf', () => ({ name: 'form', file: PDF() })),
  },
  { method: 'POST', route: '/templates/docx', kind: 'create', ...templateCreate('/templates/docx', docx) },
  { method: 'POST', route: '/templates/html', kind: 'create', ...templateCreate('/templates/html', html, false) },
  {
    method: 'POST',
    route: '/templates/:id/clone',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}/clone`, body: { name: 'Copy' } }),
  },
  {
    method: 'POST',
    route: '/templates/:id/clone',
    kind: 'create',
    into: (folder) => ({
      path: `/templates/${salesSet.template}/clone`,
      body: folder === undefined ? {} : { folder_name: folder },
    }),
    createdTemplate: (json) => json.id,
    // The source's folder.
    unnamed: 'Sales / EMEA',
  },
  {
    method: 'PUT',
    route: '/templates/:id',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}`, body: { name: 'Renamed' } }),
    changes: true,
  },
  {
    method: 'PATCH',
    route: '/templates/:id',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}`, body: { name: 'Renamed' } }),
    changes: true,
  },
  {
    // Moving a template: out of the key's folders is refused like making one there.
    method: 'PUT',
    route: '/templates/:id',
    kind: 'create',
    into: (folder, r) => ({ path: `/templates/${r.template}`, body: { folder_name: folder } }),
    createdTemplate: (_json, r) => r.template,
    changes: true,
  },
  {
    method: 'DELETE',
    route: '/templates/:id',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}` }),
    changes: true,
  },
  {
    method: 'DELETE',
    route: '/templates/:id',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}?permanently=true` }),
    changes: true,
  },
  {
    method: 'POST',
    route: '/submissions',
    kind: 'record',
    ...createSubmissions(
      () => '/submissions',
      (r) => ({ template_id: r.template, send_email: false, submitters }),
    ),
  },
  {
    method: 'POST',
    route: '/templates/:id/submissions',
    kind: 'record',
    ...createSubmissions(
      (r) => `/templates/${r.template}/submissions`,
      () => ({ send_email: false, submitters }),
    ),
  },
  {
    method: 'POST',
    route: '/submissions/emails',
    kind: 'record',
    ...createSubmissions(
      () => '/submissions/emails',
      (r) => ({ template_id: r.template, send_email: false, emails: 'probe@alice.test' }),
    ),
  },
  {
    method: 'POST',
    route: '/submissions/init',
    kind: 'record',
    ...createSubmissions(
      () => '/submissions/init',
      (r) => ({ template_id: r.template, send_email: false, submitters }),
    ),
  },
  ...(
    [
      ['/submissions/pdf', () => ({ name: 'form', file: PDF() }), true],
      ['/submissions/docx', docx, true],
      ['/submissions/html', html, false],
    ] as const
  ).flatMap(([path, document, withFields]): RestCase[] => [
    { method: 'POST', route: path, kind: 'record', ...oneOff(path, document, withFields) },
    { method: 'POST', route: path, kind: 'create', ...oneOff(path, document, withFields) },
  ]),
  {
    method: 'GET',
    route: '/submissions',
    kind: 'list',
    request: () => ({ path: '/submissions?limit=100' }),
    listed: (json) => ({ submissions: ids(json.data) }),
  },
  {
    method: 'GET',
    route: '/submissions',
    kind: 'record',
    request: (r) => ({ path: `/submissions?template_id=${r.template}` }),
  },
  {
    method: 'GET',
    route: '/templates/:id/submissions',
    kind: 'record',
    request: (r) => ({ path: `/templates/${r.template}/submissions` }),
  },
  {
    method: 'GET',
    route: '/submissions/:id',
    kind: 'record',
    request: (r) => ({ path: `/submissions/${r.submission}` }),
  },
  {
    method: 'GET',
    route: '/submissions/:id/documents',
    kind: 'record',
    request: (r) => ({ path: `/submissions/${r.submission}/documents` }),
  },
  {
    method: 'PUT',
    route: '/submissions/:id',
    kind: 'record',
    request: (r) => ({ path: `/submissions/${r.submission}`, body: { name: 'Renamed' } }),
    changes: true,
  },
  {
    method: 'PATCH',
    route: '/submissions/:id',
    kind: 'record',
    request: (r) => ({ path: `/submissions/${r.submission}`, body: { archived: true } }),
    changes: true,
  },
  {
    method: 'DELETE',
    route: '/submissions/:id',
    kind: 'record',
    request: (r) => ({ path: `/submissions/${r.submission}` }),
    changes: true,
  },
  {
    method: 'DELETE',
    route: '/submissions/:id',
    kind: 'record',
    request: (r) => ({ path: `/submissions/${r.submission}?permanently=true` }),
    changes: true,
  },
  {
    method: 'GET',
    route: '/submitters',
    kind: 'list',
    request: () => ({ path: '/submitters?limit=100' }),
    listed: (json) => ({ submitters: ids(json.data) }),
  },
  {
    method: 'GET',
    route: '/submitters',
    kind: 'record',
    request: (r) => ({ path: `/submitters?submission_id=${r.submission}` }),
  },
  {
    method: 'GET',
    route: '/submitters',
    kind: 'record',
    request: (r) => ({ path: `/submitters?template_id=${r.template}` }),
  },
  { method: 'GET', route: '/submitters/:id', kind: 'record', request: (r) => ({ path: `/submitters/${r.submitter}` }) },
  {
    method: 'PUT',
    route: '/submitters/:id',
    kind: 'record',
    request: (r) => ({ path: `/submitters/${r.submitter}`, body: { name: 'Renamed' } }),
    changes: true,
  },
  {
    method: 'PATCH',
    route: '/submitters/:id',
    kind: 'record',
    request: (r) => ({ path: `/submitters/${r.submitter}`, body: { completed: true } }),
    changes: true,
  },
  {
    method: 'POST',
    route: '/submitter_form_views',
    kind: 'public',
    request: (r) => ({ path: '/submitter_form_views', body: { submitter_slug: r.slug } }),
  },
  {
    method: 'POST',
    route: '/submitter_email_clicks',
    kind: 'public',
    request: (r) => ({ path: '/submitter_email_clicks', body: { submitter_slug: r.slug, t: 'not-the-tag' } }),
  },
  {
    method: 'POST',
    route: '/tools/merge',
    kind: 'none',
    request: () => ({ path: '/tools/merge', body: { files: [PDF(), PDF()] } }),
  },
  {
    method: 'POST',
    route: '/tools/verify',
    kind: 'none',
    request: () => ({ path: '/tools/verify', body: { file: PDF() } }),
  },
  {
    method: 'POST',
    route: '/submissions/bulk',
    kind: 'record',
    request: (r) => ({
      path: '/submissions/bulk',
      body: { template_id: r.template, rows: [{ Email: 'probe@alice.test' }], send_email: false },
    }),
  },
  {
    method: 'POST',
    route: '/templates/:id/submissions/bulk',
    kind: 'record',
    request: (r) => ({
      path: `/templates/${r.template}/submissions/bulk`,
      body: { rows: [{ Email: 'probe@alice.test' }], send_email: false },
    }),
  },
  {
    method: 'GET',
    route: '/submissions/bulk/:id',
    kind: 'record',
    request: (r) => ({ path: `/submissions/bulk/${bulkSends.get(r.template)}` }),
  },
  {
    method: 'GET',
    route: '/events/form/:type',
    kind: 'list',
    request: () => ({ path: '/events/form/viewed?limit=100' }),
    listed: (json) => ({ submitters: json.data.map((e: { data: { id: number } }) => e.data.id) }),
  },
  {
    method: 'GET',
    route: '/events/submission/:type',
    kind: 'list',
    request: () => ({ path: '/events/submission/created?limit=100' }),
    listed: (json) => ({ submissions: json.data.map((e: { data: { id: number } }) => e.data.id) }),
  },
];

/** POST routes that change nothing (GraphQL queries): a read key may use them. */
const READING_POSTS = new Set(['/tools/merge', '/tools/verify']);
const restWrites = (c: RestCase) => c.method !== 'GET' && c.kind !== 'public' && !READING_POSTS.has(c.route);

/** The signing form's multipart upload: no key is read (the slug is the capability). */
async function upload(key: string, slug: string): Promise<{ status: number; json: any }> {
  const form = new FormData();
  form.set('submitter_slug', slug);
  form.set('type', 'file');
  form.set('file', new Blob([Buffer.from('hello')], { type: 'text/plain' }), 'a.txt');
  const response = await fetch(`${t.url}${ATTACHMENTS_PATH}`, {
    method: 'POST',
    headers: { 'X-Auth-Token': key },
    body: form,
  });
  return { status: response.status, json: await response.json() };
}

describe('the case lists', () => {
  it('cover every REST route the gateway registers, each method, and the multipart upload', () => {
    const covered = new Set(REST_CASES.map((c) => `${c.method} ${c.route}`));
    const registered = restRoutes.flatMap((r) => [r.method].flat().map((m) => `${m} ${r.path}`));
    expect(registered.length).toBeGreaterThan(30);
    expect(registered.filter((route) => !covered.has(route))).toEqual([]);
    expect(ATTACHMENTS_PATH).toBe('/api/attachments');
  });

  it('cover every GraphQL query, mutation and subscription field', () => {
    const covered = new Set(GRAPHQL_CASES.map((c) => c.field));
    const fields = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].flatMap((root) =>
      Object.keys(root?.getFields() ?? {}),
    );
    expect(fields.length).toBeGreaterThan(40);
    expect(fields.filter((name) => !covered.has(name))).toEqual([]);
  });
});

const ok = (status: number) => status >= 200 && status < 300;

/**
 * The folders a create case is probed with, each with the folder the template lands in (null:
 * refused): HR (outside), a new subfolder of Sales, and none named where the case says where that goes.
 */
function folderProbes(c: { noFolderName?: boolean; unnamed?: string | null }): [string | undefined, string | null][] {
  return [
    ...(c.noFolderName
      ? []
      : ([
          ['HR', null],
          ['Sales / New', 'Sales / New'],
        ] as [string, string | null][])),
    ...(c.unnamed ? ([[undefined, c.unnamed]] as [undefined, string][]) : []),
  ];
}
const show = (json: unknown) => JSON.stringify(json)?.slice(0, 160);

describe('REST: every route, a read key and a key limited to folders', () => {
  it('a read key: served where the route reads, 403 naming "write" where it writes; the form by slug', async () => {
    const wrong: string[] = [];
    for (const c of REST_CASES) {
      const request = c.request?.(hr) ?? c.into!(c.noFolderName ? undefined : 'HR', hr);
      const { status, json } = await rest(t.url, reader, c.method, request.path, request.body);
      const expected = restWrites(c) ? 'refused' : 'served';
      const right = expected === 'refused' ? status === 403 && json?.error === WRITE_ERROR : ok(status);
      if (!right) wrong.push(`${c.method} ${request.path}: ${status} ${show(json)} (expected ${expected})`);
    }
    const uploaded = await upload(reader, hr.slug);
    if (uploaded.status !== 200) wrong.push(`POST ${ATTACHMENTS_PATH}: ${uploaded.status} ${show(uploaded.json)}`);
    expect(wrong).toEqual([]);
    // Refused before the body is read: a body that is not JSON gets the 403, not a 422.
    const malformed = await fetch(`${t.url}/api/templates/${hr.template}`, {
      method: 'PUT',
      headers: { 'X-Auth-Token': reader, 'content-type': 'application/json' },
      body: '{"name":',
    });
    expect(malformed.status).toBe(403);
    expect(await malformed.json()).toEqual({ error: WRITE_ERROR });
  });

  it('a Sales key: its records served, HR’s refused, lists without HR, templates made only into Sales', async () => {
    const wrong: string[] = [];
    const note = (what: string, status: number, json: unknown, expected: string) =>
      wrong.push(`${what}: ${status} ${show(json)} (expected ${expected})`);
    for (const c of REST_CASES) {
      if (c.kind === 'record') {
        const refused = c.request!(hr);
        const answer = await rest(t.url, sales, c.method, refused.path, refused.body);
        if (answer.status !== 403 || answer.json?.error !== FOLDER_ERROR)
          note(`${c.method} ${refused.path} (HR)`, answer.status, answer.json, `403 ${FOLDER_ERROR}`);
        const own = c.changes ? await recordSet('Sales / EMEA') : salesSet;
        const served = c.request!(own);
        const mine = await rest(t.url, sales, c.method, served.path, served.body);
        if (!ok(mine.status)) note(`${c.method} ${served.path} (Sales)`, mine.status, mine.json, '2xx');
      } else if (c.kind === 'list') {
        const { path } = c.request!(salesSet);
        const { status, json } = await rest(t.url, sales, c.method, path);
        if (!ok(status)) {
          note(`${c.method} ${path}`, status, json, '2xx');
          continue;
        }
        const listed = c.listed!(json);
        const leaked = [
          ...(listed.templates ?? []).filter((id) => id === hr.template),
          ...(listed.submissions ?? []).filter((id) => id === hr.submission),
          ...(listed.submitters ?? []).filter((id) => id === hr.submitter),
        ];
        const own =
          listed.templates?.includes(salesSet.template) ??
          listed.submissions?.includes(salesSet.submission) ??
          listed.submitters?.includes(salesSet.submitter);
        if (leaked.length > 0 || !own) note(`${c.method} ${path}`, status, listed, 'Sales records only');
      } else if (c.kind === 'create') {
        const own = c.changes ? await recordSet('Sales / EMEA') : salesSet;
        for (const [folder, expected] of folderProbes(c)) {
          const request = c.into!(folder, own);
          const { status, json } = await rest(t.url, sales, c.method, request.path, request.body);
          if (expected === null) {
            if (status !== 403 || json?.error !== FOLDER_ERROR)
              note(`${c.method} ${request.path} into ${folder}`, status, json, `403 ${FOLDER_ERROR}`);
          } else if (!ok(status)) {
            note(`${c.method} ${request.path} into ${folder}`, status, json, '2xx');
          } else {
            const made = await folderOf(await c.createdTemplate!(json, own));
            if (made !== expected) note(`${c.method} ${request.path} into ${folder}`, status, made, expected);
          }
        }
      } else {
        const request = c.request!(hr);
        const { status, json } = await rest(t.url, sales, c.method, request.path, request.body);
        if (!ok(status)) note(`${c.method} ${request.path}`, status, json, '2xx');
      }
    }
    const uploaded = await upload(sales, hr.slug);
    if (uploaded.status !== 200) note(`POST ${ATTACHMENTS_PATH} (HR slug)`, uploaded.status, uploaded.json, '200');
    expect(wrong).toEqual([]);
  }, 240_000);
});

interface GraphQLCase {
  field: string;
  /** record, list, create, none, public as for REST; account: account-wide (webhooks, settings); keys: API keys. */
  kind: Kind | 'account' | 'keys';
  query: string;
  variables?: (r: RecordSet) => Record<string, unknown> | Promise<Record<string, unknown>>;
  listed?: (data: any) => Listed;
  /** create: the variables making a template in a folder, and the template made. */
  into?: (folder: string | undefined, r: RecordSet) => Record<string, unknown>;
  createdTemplate?: (data: any, r: RecordSet) => number | Promise<number>;
  unnamed?: string | null;
  noFolderName?: boolean;
  changes?: boolean;
  subscription?: boolean;
}

const gqlCreate = (
  mutation: string,
  inputType: string,
  document: () => Record<string, unknown>,
  withFields = true,
) => ({
  query: `mutation ($input: ${inputType}!) { ${mutation}(input: $input) { template { id } } }`,
  into: (folder: string | undefined) => ({
    input: {
      name: 'Made',
      ...(folder === undefined ? {} : { folderName: folder }),
      documents: [document()],
      ...(withFields ? { fields: FIELDS } : {}),
    },
  }),
  createdTemplate: (data: any) => data[mutation].template.id,
  unnamed: 'Sales',
});
const gqlOneOff = (kind: 'Pdf' | 'Docx' | 'Html', document: () => Record<string, unknown>, withFields: boolean) => {
  const field = `createSubmissionFrom${kind}`;
  const input = (templateIds?: number[]) => ({
    documents: [document()],
    ...(withFields ? { fields: FIELDS } : {}),
    submitters: [{ role: 'Client', email: 'probe@alice.test' }],
    ...(templateIds ? { templateIds } : {}),
  });
  const query =
    `mutation ($input: CreateSubmissionFrom${kind === 'Html' ? 'Html' : 'File'}Input!) ` +
    `{ ${field}(input: $input) { submissionIds } }`;
  return [
    { field, kind: 'record' as const, query, variables: (r: RecordSet) => ({ input: input([r.template]) }) },
    {
      field,
      kind: 'create' as const,
      query,
      into: () => ({ input: input() }),
      createdTemplate: async (data: any) =>
        (
          await t.db.submission.findUniqueOrThrow({
            where: { id: data[field].submissionIds[0] },
            select: { templateId: true },
          })
        ).templateId,
      unnamed: 'Sales',
      noFolderName: true,
    },
  ];
};

/** Every GraphQL root field (more than one case where a field does more than one thing). */
const GRAPHQL_CASES: GraphQLCase[] = [
  { field: 'viewer', kind: 'none', query: '{ viewer { user { id } } }' },
  { field: 'apiKeys', kind: 'keys', query: '{ apiKeys { id } }' },
  { field: 'createApiKey', kind: 'keys', query: 'mutation { createApiKey(input: {folders: ["Sales"]}) { token } }' },
  {
    field: 'revokeApiKey',
    kind: 'keys',
    query: 'mutation ($id: Int!) { revokeApiKey(input: {id: $id}) { apiKey { id } } }',
    variables: () => ({ id: alice.apiKeyId }),
  },
  {
    field: 'templates',
    kind: 'list',
    query: '{ templates(limit: 100) { nodes { id } } }',
    listed: (data) => ({ templates: ids(data.templates.nodes) }),
  },
  {
    field: 'template',
    kind: 'record',
    query: 'query ($id: Int!) { template(id: $id) { id } }',
    variables: (r) => ({ id: r.template }),
  },
  {
    field: 'submissions',
    kind: 'list',
    query: '{ submissions(limit: 100) { ids } }',
    listed: (data) => ({ submissions: data.submissions.ids }),
  },
  {
    field: 'submissions',
    kind: 'record',
    query: 'query ($id: Int) { submissions(templateId: $id) { ids } }',
    variables: (r) => ({ id: r.template }),
  },
  {
    field: 'submission',
    kind: 'record',
    query: 'query ($id: Int!) { submission(id: $id) { id template { id } submitters { id } } }',
    variables: (r) => ({ id: r.submission }),
  },
  {
    field: 'submissionDocuments',
    kind: 'record',
    query: 'query ($id: Int!) { submissionDocuments(id: $id) { id } }',
    variables: (r) => ({ id: r.submission }),
  },
  {
    field: 'submitters',
    kind: 'list',
    query: '{ submitters(limit: 100) { nodes { id } } }',
    listed: (data) => ({ submitters: ids(data.submitters.nodes) }),
  },
  {
    field: 'submitters',
    kind: 'record',
    query: 'query ($id: Int) { submitters(submissionId: $id) { nodes { id } } }',
    variables: (r) => ({ id: r.submission }),
  },
  {
    field: 'submitters',
    kind: 'record',
    query: 'query ($id: Int) { submitters(templateId: $id) { nodes { id } } }',
    variables: (r) => ({ id: r.template }),
  },
  {
    field: 'submitter',
    kind: 'record',
    query: 'query ($id: Int!) { submitter(id: $id) { id submission { id } } }',
    variables: (r) => ({ id: r.submitter }),
  },
  {
    field: 'eventFeed',
    kind: 'list',
    query: '{ eventFeed(kind: form, type: "viewed", limit: 100) { data { data } } }',
    listed: (data) => ({ submitters: data.eventFeed.data.map((e: { data: { id: number } }) => e.data.id) }),
  },
  {
    field: 'eventFeed',
    kind: 'list',
    query: '{ eventFeed(kind: submission, type: "created", limit: 100) { data { data } } }',
    listed: (data) => ({ submissions: data.eventFeed.data.map((e: { data: { id: number } }) => e.data.id) }),
  },
  {
    field: 'mergePdfs',
    kind: 'none',
    query: 'query ($files: [String!]!) { mergePdfs(files: $files) }',
    variables: () => ({ files: [PDF(), PDF()] }),
  },
  {
    field: 'verifyPdf',
    kind: 'none',
    query: 'query ($file: String!) { verifyPdf(file: $file) { checksumStatus } }',
    variables: () => ({ file: PDF() }),
  },
  { field: 'webhookEndpoints', kind: 'account', query: '{ webhookEndpoints { id } }' },
  {
    field: 'webhookEndpoint',
    kind: 'account',
    query: 'query ($id: Int!) { webhookEndpoint(id: $id) { id } }',
    variables: () => ({ id: endpoint }),
  },
  { field: 'webhookDeliveries', kind: 'account', query: '{ webhookDeliveries { id } }' },
  {
    field: 'webhookDelivery',
    kind: 'account',
    query: 'query ($id: Int!) { webhookDelivery(id: $id) { id } }',
    variables: () => ({ id: delivery }),
  },
  {
    field: 'createWebhookEndpoint',
    kind: 'account',
    query: 'mutation { createWebhookEndpoint(input: {url: "http://127.0.0.1:9/probe"}) { endpoint { id } } }',
  },
  {
    field: 'updateWebhookEndpoint',
    kind: 'account',
    query: 'mutation ($id: Int!) { updateWebhookEndpoint(input: {id: $id, enabled: false}) { endpoint { id } } }',
    variables: () => ({ id: endpoint }),
  },
  {
    field: 'deleteWebhookEndpoint',
    kind: 'account',
    query: 'mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }',
    variables: () => ({ id: endpoint }),
  },
  {
    field: 'rotateWebhookSecret',
    kind: 'account',
    query: 'mutation ($id: Int!) { rotateWebhookSecret(input: {id: $id}) { secret } }',
    variables: () => ({ id: endpoint }),
  },
  {
    field: 'sendTestWebhook',
    kind: 'account',
    query: 'mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { delivery { id } } }',
    variables: () => ({ id: endpoint }),
  },
  {
    field: 'redeliverWebhook',
    kind: 'account',
    query: 'mutation ($id: Int!) { redeliverWebhook(input: {deliveryId: $id}) { delivery { id } } }',
    variables: () => ({ id: delivery }),
  },
  {
    field: 'updateAccountPreferences',
    kind: 'account',
    query: 'mutation { updateAccountPreferences(input: {combinePdfResult: true}) { id } }',
  },
  // The account's own signing certificates (docs/signatures.md): account-wide.
  { field: 'signingCertificates', kind: 'account', query: '{ signingCertificates { id } }' },
  {
    field: 'uploadSigningCertificate',
    kind: 'account',
    query: 'mutation { uploadSigningCertificate(input: {file: "AAAA", password: "x"}) { id } }',
  },
  {
    field: 'revokeSigningCertificate',
    kind: 'account',
    query: 'mutation { revokeSigningCertificate(id: 1) { id } }',
  },
  {
    field: 'createTemplateFromPdf',
    kind: 'create',
    ...gqlCreate('createTemplateFromPdf', 'CreateTemplateFromFileInput', () => ({ name: 'form', file: PDF() })),
  },
  {
    field: 'createTemplateFromDocx',
    kind: 'create',
    ...gqlCreate('createTemplateFromDocx', 'CreateTemplateFromFileInput', docx),
  },
  {
    field: 'createTemplateFromHtml',
    kind: 'create',
    ...gqlCreate('createTemplateFromHtml', 'CreateTemplateFromHtmlInput', html, false),
  },
  {
    field: 'updateTemplate',
    kind: 'record',
    query: 'mutation ($id: Int!) { updateTemplate(input: {id: $id, name: "Renamed"}) { template { id } } }',
    variables: (r) => ({ id: r.template }),
    changes: true,
  },
  {
    field: 'updateTemplate',
    kind: 'create',
    query:
      'mutation ($id: Int!, $folder: String) ' +
      '{ updateTemplate(input: {id: $id, folderName: $folder}) { template { id } } }',
    into: (folder, r) => ({ id: r.template, folder }),
    createdTemplate: (_data, r) => r.template,
    changes: true,
  },
  {
    field: 'archiveTemplate',
    kind: 'record',
    query: 'mutation ($id: Int!) { archiveTemplate(input: {id: $id}) { template { id } } }',
    variables: (r) => ({ id: r.template }),
    changes: true,
  },
  {
    field: 'deleteTemplate',
    kind: 'record',
    query: 'mutation ($id: Int!) { deleteTemplate(input: {id: $id}) { id } }',
    variables: (r) => ({ id: r.template }),
    changes: true,
  },
  {
    field: 'cloneTemplate',
    kind: 'record',
    query: 'mutation ($id: Int!) { cloneTemplate(input: {id: $id}) { template { id } } }',
    variables: (r) => ({ id: r.template }),
  },
  {
    field: 'cloneTemplate',
    kind: 'create',
    query:
      'mutation ($id: Int!, $folder: String) ' +
      '{ cloneTemplate(input: {id: $id, folderName: $folder}) { template { id } } }',
    into: (folder) => ({ id: salesSet.template, folder }),
    createdTemplate: (data) => data.cloneTemplate.template.id,
    unnamed: 'Sales / EMEA',
  },
  {
    field: 'updateTemplateDocuments',
    kind: 'record',
    query:
      'mutation ($id: Int!, $file: String!) { updateTemplateDocuments(input: {id: $id, documents: [{file: $file}]}) ' +
      '{ template { id } } }',
    variables: (r) => ({ id: r.template, file: PDF() }),
    changes: true,
  },
  {
    field: 'mergeTemplates',
    kind: 'record',
    query: 'mutation ($ids: [Int!]!) { mergeTemplates(input: {templateIds: $ids}) { template { id } } }',
    variables: (r) => ({ ids: [salesSet.template, r.template] }),
  },
  {
    field: 'mergeTemplates',
    kind: 'create',
    query:
      'mutation ($ids: [Int!]!, $folder: String) { mergeTemplates(input: {templateIds: $ids, folderName: $folder}) ' +
      '{ template { id } } }',
    into: (folder) => ({ ids: [salesSet.template, salesOther.template], folder }),
    createdTemplate: (data) => data.mergeTemplates.template.id,
    unnamed: 'Sales / EMEA',
  },
  {
    field: 'createSubmissions',
    kind: 'record',
    query:
      'mutation ($id: Int!) { createSubmissions(input: {templateId: $id, sendEmail: false, submitters: [{role: ' +
      '"Client", email: "probe@alice.test"}]}) { submissionIds } }',
    variables: (r) => ({ id: r.template }),
  },
  ...gqlOneOff('Pdf', () => ({ name: 'form', file: PDF() }), true),
  ...gqlOneOff('Docx', docx, true),
  ...gqlOneOff('Html', html, false),
  {
    field: 'updateSubmission',
    kind: 'record',
    query: 'mutation ($id: Int!) { updateSubmission(input: {id: $id, name: "Renamed"}) { submission { id } } }',
    variables: (r) => ({ id: r.submission }),
    changes: true,
  },
  {
    field: 'archiveSubmission',
    kind: 'record',
    query: 'mutation ($id: Int!) { archiveSubmission(input: {id: $id}) { submission { id } } }',
    variables: (r) => ({ id: r.submission }),
    changes: true,
  },
  {
    field: 'deleteSubmission',
    kind: 'record',
    query: 'mutation ($id: Int!) { deleteSubmission(input: {id: $id}) { id } }',
    variables: (r) => ({ id: r.submission }),
    changes: true,
  },
  {
    field: 'updateSubmitter',
    kind: 'record',
    query: 'mutation ($id: Int!) { updateSubmitter(input: {id: $id, name: "Renamed"}) { submitter { id } } }',
    variables: (r) => ({ id: r.submitter }),
    changes: true,
  },
  {
    field: 'signingForm',
    kind: 'public',
    query: 'query ($slug: String!) { signingForm(slug: $slug) { submitter { slug } } }',
    variables: (r) => ({ slug: r.slug }),
  },
  {
    field: 'openSigningForm',
    kind: 'public',
    query: 'mutation ($slug: String!) { openSigningForm(slug: $slug) { submitter { slug } } }',
    variables: (r) => ({ slug: r.slug }),
  },
  {
    field: 'recordEmailClick',
    kind: 'public',
    query: 'mutation ($slug: String!) { recordEmailClick(slug: $slug, t: "not-the-tag") }',
    variables: (r) => ({ slug: r.slug }),
  },
  {
    field: 'saveSigningFormValues',
    kind: 'public',
    query: 'mutation ($slug: String!) { saveSigningFormValues(slug: $slug, values: {}) { submitter { slug } } }',
    variables: (r) => ({ slug: r.slug }),
  },
  {
    field: 'declineSigningForm',
    kind: 'public',
    query: 'mutation ($slug: String!) { declineSigningForm(slug: $slug, reason: "No") { submitter { slug } } }',
    variables: (r) => ({ slug: r.slug }),
    changes: true,
  },
  {
    field: 'acceptSigningConsent',
    kind: 'public',
    // Not the current version: a VALIDATION refusal, the same with any key or none.
    query: 'mutation ($slug: String!) { acceptSigningConsent(slug: $slug, version: "v0") { submitter { slug } } }',
    variables: (r) => ({ slug: r.slug }),
  },
  {
    field: 'completeSigningForm',
    kind: 'public',
    // Its Name field is required: a VALIDATION refusal, the same with any key or none.
    query: 'mutation ($slug: String!) { completeSigningForm(slug: $slug) { submitter { slug } } }',
    variables: (r) => ({ slug: r.slug }),
    changes: true,
  },
  {
    field: 'createBulkSend',
    kind: 'record',
    query: 'mutation ($input: CreateBulkSendInput!) { createBulkSend(input: $input) { bulkSend { id } } }',
    variables: (r) => ({ input: { templateId: r.template, rows: [{ Email: 'probe@alice.test' }], sendEmail: false } }),
  },
  {
    field: 'bulkSend',
    kind: 'record',
    query: 'query ($id: Int!) { bulkSend(id: $id) { id } }',
    variables: async (r) => ({ id: await bulkSendOf(r) }),
  },
  {
    field: 'startTemplateForm',
    kind: 'public',
    query: 'mutation ($slug: String!) { startTemplateForm(slug: $slug, input: {email: "probe@alice.test"}) { slug } }',
    variables: async (r) => ({ slug: await sharedLinkOf(r) }),
    changes: true,
  },
  {
    field: 'formEvents',
    kind: 'record',
    query: 'subscription ($id: Int) { formEvents(templateId: $id) { eventType } }',
    variables: (r) => ({ id: r.template }),
    subscription: true,
  },
  {
    field: 'formEvents',
    kind: 'record',
    query: 'subscription ($id: Int) { formEvents(submissionId: $id) { eventType } }',
    variables: (r) => ({ id: r.submission }),
    subscription: true,
  },
  {
    field: 'bulkSendProgress',
    kind: 'record',
    // Its first message is the bulk send as it is now.
    query: 'subscription ($id: Int!) { bulkSendProgress(id: $id) { id } }',
    variables: async (r) => ({ id: await bulkSendOf(r) }),
    subscription: true,
  },
  {
    field: 'submissionUpdated',
    kind: 'record',
    query: 'subscription ($id: Int!) { submissionUpdated(id: $id) { eventType } }',
    variables: (r) => ({ id: r.submission }),
    subscription: true,
  },
];

type Errors = { message: string; extensions?: { code?: string; details?: { scope?: string } } }[] | undefined;

/** A query or mutation, or a subscription's first answer (an error, or the first event: the form opened). */
async function call(key: string, c: GraphQLCase, variables: Record<string, unknown>, r: RecordSet) {
  if (!c.subscription) return (await graphql(t.url, c.query, { key, variables })).body;
  const { feed } = await subscribeSse(t.url, key, c.query, variables);
  try {
    // A served subscription is listening: opening the form raises form.viewed, its first event.
    const first = feed.next(8000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await rest(t.url, alice.apiKey, 'POST', '/submitter_form_views', { submitter_slug: r.slug });
    return await first;
  } catch (error) {
    return { errors: [{ message: `no answer: ${(error as Error).message}` }] };
  } finally {
    feed.close();
  }
}

const refusal = (errors: Errors, scope: string) =>
  errors?.[0]?.extensions?.code === 'FORBIDDEN' && errors[0].extensions.details?.scope === scope;
const isMutation = (field: string) => Boolean(schema.getMutationType()?.getFields()[field]);

describe('GraphQL: every field, a read key and a key limited to folders', () => {
  it('a read key: queries and subscriptions served, mutations FORBIDDEN "write"; the form by slug', async () => {
    const wrong: string[] = [];
    for (const c of GRAPHQL_CASES) {
      // A new set per case where the full key's answer would change it, or a subscription needs a first open.
      const r = c.changes || c.subscription || c.kind === 'public' ? await recordSet('HR') : hr;
      const variables = (await c.variables?.(r)) ?? c.into?.(c.noFolderName ? undefined : 'HR', r) ?? {};
      const { errors } = await call(reader, c, variables, r);
      const writes = isMutation(c.field) && c.kind !== 'public';
      const right = writes
        ? refusal(errors, 'write') && errors![0]!.message === WRITE_ERROR
        : c.kind === 'public'
          ? !['FORBIDDEN', 'UNAUTHENTICATED'].includes(errors?.[0]?.extensions?.code ?? '')
          : errors === undefined;
      if (!right)
        wrong.push(`${c.field} ${show(variables)}: ${show(errors)} (expected ${writes ? 'FORBIDDEN write' : 'data'})`);
    }
    expect(wrong).toEqual([]);
  }, 240_000);

  it('a Sales key: its records served, HR’s FORBIDDEN, lists without HR, account-wide fields refused', async () => {
    const wrong: string[] = [];
    const note = (what: string, got: unknown, expected: string) =>
      wrong.push(`${what}: ${show(got)} (expected ${expected})`);
    for (const c of GRAPHQL_CASES) {
      if (c.kind === 'record') {
        const hrSet = c.subscription ? await recordSet('HR') : hr;
        const refused = await call(sales, c, await c.variables!(hrSet), hrSet);
        if (!refusal(refused.errors, 'folders') || refused.errors![0]!.message !== FOLDER_ERROR)
          note(`${c.field} (HR)`, refused.errors, `FORBIDDEN ${FOLDER_ERROR}`);
        const own = c.changes || c.subscription ? await recordSet('Sales / EMEA') : salesSet;
        const served = await call(sales, c, await c.variables!(own), own);
        if (served.errors) note(`${c.field} (Sales)`, served.errors, 'data');
      } else if (c.kind === 'list') {
        const { data, errors } = await call(sales, c, {}, salesSet);
        if (errors) {
          note(c.field, errors, 'data');
          continue;
        }
        const listed = c.listed!(data);
        const leaked =
          listed.templates?.includes(hr.template) ||
          listed.submissions?.includes(hr.submission) ||
          listed.submitters?.includes(hr.submitter);
        const own =
          listed.templates?.includes(salesSet.template) ??
          listed.submissions?.includes(salesSet.submission) ??
          listed.submitters?.includes(salesSet.submitter);
        if (leaked || !own) note(c.field, listed, 'Sales records only');
      } else if (c.kind === 'create') {
        const own = c.changes ? await recordSet('Sales / EMEA') : salesSet;
        for (const [folder, expected] of folderProbes(c)) {
          const { data, errors } = await call(sales, c, c.into!(folder, own), own);
          if (expected === null) {
            if (!refusal(errors, 'folders')) note(`${c.field} into ${folder}`, errors, 'FORBIDDEN folders');
          } else if (errors) {
            note(`${c.field} into ${folder}`, errors, 'data');
          } else {
            const made = await folderOf(await c.createdTemplate!(data, own));
            if (made !== expected) note(`${c.field} into ${folder}`, made, expected);
          }
        }
      } else if (c.kind === 'account') {
        const { errors } = await call(sales, c, (await c.variables?.(hr)) ?? {}, hr);
        if (!refusal(errors, 'folders')) note(c.field, errors, 'FORBIDDEN folders');
      } else if (c.kind === 'none' || c.kind === 'public') {
        const r = c.changes || c.kind === 'public' ? await recordSet('HR') : hr;
        const { errors } = await call(sales, c, (await c.variables?.(r)) ?? {}, r);
        const right =
          c.kind === 'none'
            ? errors === undefined
            : !['FORBIDDEN', 'UNAUTHENTICATED'].includes(errors?.[0]?.extensions?.code ?? '');
        if (!right) note(c.field, errors, c.kind === 'none' ? 'data' : 'the answer without a key');
      }
      // keys: their own test below.
    }
    expect(wrong).toEqual([]);
  }, 240_000);
});

describe('API keys: a key makes, sees and revokes no key broader than itself', () => {
  it('a read key lists every key but makes and revokes none', async () => {
    const listed = await graphql(t.url, '{ apiKeys { id name scopes folders } }', { key: reader });
    expect(listed.body.errors).toBeUndefined();
    expect(listed.body.data.apiKeys).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'reader', scopes: ['read'], folders: [] }),
        expect.objectContaining({ name: 'sales', scopes: ['read', 'write'], folders: ['Sales'] }),
      ]),
    );
    for (const c of GRAPHQL_CASES.filter((k) => k.kind === 'keys' && isMutation(k.field))) {
      const { errors } = await call(reader, c, (await c.variables?.(hr)) ?? {}, hr);
      expect(refusal(errors, 'write'), `${c.field}: ${show(errors)}`).toBe(true);
    }
  });

  it('refuses scopes that say nothing or are unknown (422 VALIDATION), making no key', async () => {
    const before = await t.db.apiKey.count();
    for (const [input, message] of [
      ['{scopes: []}', 'scopes must name read and/or write'],
      ['{scopes: ["admin"]}', 'scopes must be read or write'],
    ] as const) {
      const { body } = await graphql(t.url, `mutation { createApiKey(input: ${input}) { token } }`, {
        key: alice.apiKey,
      });
      expect(body.errors?.[0]?.extensions?.code, input).toBe('VALIDATION');
      expect(body.errors?.[0]?.message, input).toContain(message);
    }
    expect(await t.db.apiKey.count()).toBe(before);
  });

  it('a Sales key sees the keys of its folders, makes keys only within them, revokes only those', async () => {
    const listed = await graphql(t.url, '{ apiKeys { id name folders } }', { key: sales });
    expect(listed.body.errors).toBeUndefined();
    // Its own, not the full keys nor the read key of every folder.
    expect(listed.body.data.apiKeys.map((k: { name: string }) => k.name)).toEqual(['sales']);

    const make = (input: string) =>
      graphql(t.url, `mutation { createApiKey(input: ${input}) { token apiKey { id scopes folders } } }`, {
        key: sales,
      });
    for (const input of ['{}', '{folders: ["HR"]}', '{folders: ["Sales", "HR"]}']) {
      const { body } = await make(input);
      expect(refusal(body.errors, 'folders'), `${input}: ${show(body.errors)}`).toBe(true);
    }
    const before = await t.db.folder.count();
    const narrower = await make('{name: "emea", scopes: ["read"], folders: ["Sales / EMEA", "Sales / New team"]}');
    expect(narrower.body.errors).toBeUndefined();
    expect(narrower.body.data.createApiKey.apiKey).toMatchObject({
      scopes: ['read'],
      folders: ['Sales / EMEA', 'Sales / New team'],
    });
    expect(await t.db.folder.count()).toBe(before + 1);
    // The narrower key works, within its folders.
    const emea = narrower.body.data.createApiKey.token;
    expect((await rest(t.url, emea, 'GET', `/templates/${salesSet.template}`)).status).toBe(200);
    expect((await rest(t.url, emea, 'GET', `/templates/${hr.template}`)).json).toEqual({ error: FOLDER_ERROR });

    const revoke = (id: number, key = sales) =>
      graphql(t.url, 'mutation ($id: Int!) { revokeApiKey(input: {id: $id}) { apiKey { id revokedAt } } }', {
        key,
        variables: { id },
      });
    expect(refusal((await revoke(alice.apiKeyId)).body.errors, 'folders')).toBe(true);
    const narrowerId = narrower.body.data.createApiKey.apiKey.id;
    expect((await revoke(narrowerId)).body.errors).toBeUndefined();
    expect((await rest(t.url, emea, 'GET', '/user')).status).toBe(401);
    // Nothing else was revoked; and the refused creates made no key.
    expect(await t.db.apiKey.count({ where: { accountId: alice.accountId, revokedAt: { not: null } } })).toBe(1);
    expect(await t.db.apiKey.count({ where: { accountId: alice.accountId, name: 'default' } })).toBe(1);
    expect((await rest(t.url, sales, 'GET', '/user')).status).toBe(200);
    expect(salesKeyId).toBeGreaterThan(0);
  });
});

describe('folders as they change', () => {
  it('a subfolder made after the key is within it; a template moved out of its folders is out at once', async () => {
    const later = await recordSet('Sales / Made later');
    expect((await rest(t.url, sales, 'GET', `/templates/${later.template}`)).status).toBe(200);
    expect((await rest(t.url, sales, 'GET', `/submitters/${later.submitter}`)).status).toBe(200);
    const moved = await rest(t.url, alice.apiKey, 'PUT', `/templates/${later.template}`, { folder_name: 'HR / Moved' });
    expect(moved.status).toBe(200);
    expect((await rest(t.url, sales, 'GET', `/templates/${later.template}`)).json).toEqual({ error: FOLDER_ERROR });
    expect((await rest(t.url, sales, 'GET', `/submissions/${later.submission}`)).status).toBe(403);
    const listed = (await rest(t.url, sales, 'GET', '/submitters?limit=100')).json.data.map(
      (s: { id: number }) => s.id,
    );
    expect(listed).not.toContain(later.submitter);
  });
});

describe('subscriptions of a key limited to folders', () => {
  it('formEvents without a filter gets the events of its folders only (over SSE)', async () => {
    const hrSet = await recordSet('HR');
    const own = await recordSet('Sales / EMEA');
    const { feed } = await subscribeSse(t.url, sales, 'subscription { formEvents { eventType submitter { id } } }');
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await rest(t.url, alice.apiKey, 'POST', '/submitter_form_views', { submitter_slug: hrSet.slug });
      await rest(t.url, alice.apiKey, 'POST', '/submitter_form_views', { submitter_slug: own.slug });
      const first = await feed.nextData();
      expect(first.formEvents).toEqual({ eventType: 'form.viewed', submitter: { id: own.submitter } });
    } finally {
      feed.close();
    }
  });
});

describe('POST /tools/verify', () => {
  it('checksum_status: a key limited to folders verifies only the completed documents of its folders', async () => {
    /** A completed submission's signed document, from a template in `folder`. */
    const completedDocument = async (folder: string) => {
      const template = (await recordSet(folder)).template;
      const created = await rest(t.url, alice.apiKey, 'POST', '/submissions', {
        template_id: template,
        send_email: false,
        // Values that differ by folder: two documents completed in the same second would otherwise be the same bytes.
        submitters: [
          { role: 'Client', email: 'done@alice.test', completed: true, values: { Name: `Ada of ${folder}` } },
        ],
      });
      expect(created.status, show(created.json)).toBe(200);
      await t.jobs.waitForIdle({ timeoutMs: 60_000 });
      const submission = (await rest(t.url, alice.apiKey, 'GET', `/submissions/${created.json[0].submission_id}`)).json;
      expect(submission.status).toBe('completed');
      return Buffer.from(await (await fetch(submission.documents[0].url)).arrayBuffer()).toString('base64');
    };
    const hrDocument = await completedDocument('HR');
    const salesDocument = await completedDocument('Sales / EMEA');
    const status = async (key: string, file: string) =>
      (await rest(t.url, key, 'POST', '/tools/verify', { file })).json.checksum_status;
    expect(await status(alice.apiKey, hrDocument)).toBe('verified');
    expect(await status(reader, hrDocument)).toBe('verified');
    expect(await status(sales, hrDocument)).toBe('not_found');
    expect(await status(sales, salesDocument)).toBe('verified');
  }, 120_000);
});

describe('over graphql-ws', () => {
  it('a read key’s mutation FORBIDDEN "write"; a Sales key’s subscription to HR FORBIDDEN "folders"', async () => {
    const readerWs = wsClient(t.url, reader);
    const salesWs = wsClient(t.url, sales);
    const first = (feed: Feed) => feed.next(8000).catch((error: unknown) => ({ errors: error as Errors }));
    try {
      const mutation = subscribeWs(
        readerWs,
        'mutation { updateAccountPreferences(input: {combinePdfResult: true}) { id } }',
      );
      const refused = await first(mutation);
      expect(refusal(refused.errors as Errors, 'write'), show(refused)).toBe(true);
      expect((await subscribeWs(readerWs, '{ viewer { user { id } } }').nextData()).viewer.user.id).toBe(alice.userId);

      const hrSet = await recordSet('HR');
      const own = await recordSet('Sales / EMEA');
      const query = 'subscription ($id: Int!) { submissionUpdated(id: $id) { eventType } }';
      const outside = await first(subscribeWs(salesWs, query, { id: hrSet.submission }));
      expect(refusal(outside.errors as Errors, 'folders'), show(outside)).toBe(true);
      const served = subscribeWs(salesWs, query, { id: own.submission });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await rest(t.url, alice.apiKey, 'POST', '/submitter_form_views', { submitter_slug: own.slug });
      expect((await served.nextData()).submissionUpdated.eventType).toBe('form.viewed');
      served.close();
    } finally {
      await readerWs.dispose();
      await salesWs.dispose();
    }
  });
});

describe('nothing refused was changed', () => {
  it("HR's records, the webhook endpoint, the account's settings and the full key are as they were", async () => {
    const template = await t.db.template.findUniqueOrThrow({
      where: { id: hr.template },
      include: { documents: true },
    });
    expect(template).toMatchObject({ name: 'HR form', archivedAt: null });
    expect(template.documents).toHaveLength(1);
    expect(await folderOf(hr.template)).toBe('HR');
    expect(await t.db.submission.findUniqueOrThrow({ where: { id: hr.submission } })).toMatchObject({
      archivedAt: null,
      name: null,
    });
    expect(await t.db.submitter.findUniqueOrThrow({ where: { id: hr.submitter } })).toMatchObject({
      name: 'Client',
      completedAt: null,
    });
    // Submissions of HR's template: only the set-up's, its own and its bulk send's row (creates from it
    // were all refused).
    expect(await t.db.submission.count({ where: { templateId: hr.template } })).toBe(2);
    expect(await t.db.bulkSend.count({ where: { templateId: hr.template } })).toBe(1);
    const webhook = await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint } });
    expect(webhook).toMatchObject({ url: 'http://127.0.0.1:9/alice', previousSecret: null, disabledAt: null });
    expect(await t.db.webhookEndpoint.count({ where: { accountId: alice.accountId } })).toBe(1);
    const account = await t.db.account.findUniqueOrThrow({ where: { id: alice.accountId } });
    expect((account.preferences as Record<string, unknown>).combine_pdf_result).toBeUndefined();
    expect((await rest(t.url, alice.apiKey, 'GET', '/user')).status).toBe(200);
  });
});
