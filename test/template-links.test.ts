/**
 * A shared template's link (`/d/{slug}`, docs/embedding.md "Template links") against a real
 * server, PostgreSQL and SMTP server: `startTemplateForm` (GraphQL, no key) creates the signer's
 * submission through the create service (source `link`, submission.created delivered as a
 * webhook, no request email), finds a returning signer again, refuses what it must (not shared,
 * archived, no email, an unknown role or several roles, file values) with nothing written, and
 * holds the per-address and per-template limits, also under a burst of concurrent starts; the
 * page at `/d/{slug}` is served only for shared templates; EMBED_ORIGINS is read and becomes the
 * pages' `frame-ancestors`; `/js/form.js` is served to other sites.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

const START = `mutation Start($slug: String!, $input: StartTemplateFormInput!) {
  startTemplateForm(slug: $slug, input: $input) { slug embedSrc created }
}`;

let t: TestApp;
let smtp: TestSmtpServer;
let receiver: Receiver;
let alice: CreatedAccount;
const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const start = (slug: string, input: Record<string, unknown>) => graphql(t.url, START, { variables: { slug, input } });
const submissionCount = () => t.db.submission.count();

/** A template from the sample PDF; returns its id and slug. */
async function createTemplate(
  fields: unknown[],
  extra: Record<string, unknown> = {},
): Promise<{ id: number; slug: string }> {
  const { status, json } = await api('POST', '/templates/pdf', {
    name: 'Agreement',
    documents: [{ name: 'Agreement', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields,
    ...extra,
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return { id: json.id, slug: json.slug };
}

const ONE_ROLE = [
  { name: 'Full Name', role: 'Signer', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
  { name: 'Company', role: 'Signer', areas: [{ x: 60, y: 160, w: 240, h: 24, page: 1 }] },
  { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 200, w: 200, h: 60, page: 1 }] },
];

beforeAll(async () => {
  smtp = await startSmtpServer();
  receiver = await startReceiver();
  t = await startTestApp({
    env: {
      SMTP_URL: smtp.url,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      EMBED_ORIGINS: 'https://partner.example.test, http://localhost:5173/',
      TEMPLATE_LINK_STARTS_PER_IP: '5',
      TEMPLATE_LINK_STARTS_PER_TEMPLATE: '2',
    },
  });
  alice = await t.createAccount({ name: 'Acme Ltd', email: 'alice@template-links.test' });
  const hook = await graphql(
    t.url,
    'mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }',
    { key: alice.apiKey, variables: { input: { url: `${receiver.url}/hooks`, events: ['submission.created'] } } },
  );
  expect(hook.body.errors).toBeUndefined();
});

afterAll(async () => {
  await t?.close();
  await smtp?.close();
  await receiver?.close();
});

// Each test starts with empty counters: the limits are per hour, and the tests run within one.
beforeEach(async () => {
  await t.db.templateLinkStart.deleteMany();
});

describe('startTemplateForm', () => {
  it('creates the signer’s submission as the API would, sends no request, and finds the signer again', async () => {
    const template = await createTemplate(ONE_ROLE);
    const answer = await start(template.slug, {
      email: ' Dana@Example.TEST ',
      name: 'Dana Scully',
      externalId: 'crm-42',
      values: { company: 'FBI', 'Full Name': 'Dana Scully' },
      readonlyFields: ['Company'],
      metadata: { lead: 7 },
      completedRedirectUrl: 'https://partner.example.test/done',
    });
    expect(answer.body.errors).toBeUndefined();
    const started = answer.body.data.startTemplateForm;
    expect(started).toEqual({ slug: expect.any(String), embedSrc: `${t.url}/s/${started.slug}`, created: true });

    // Stored as the API stores a submitter, with the link's source and the client it came from.
    const submitter = await t.db.submitter.findUniqueOrThrow({
      where: { slug: started.slug },
      include: { submission: true },
    });
    expect(submitter).toMatchObject({
      email: 'dana@example.test',
      name: 'Dana Scully',
      externalId: 'crm-42',
      metadata: { lead: 7 },
      ip: expect.stringMatching(/127\.0\.0\.1$/),
      sentAt: null,
      preferences: { send_email: true, completed_redirect_url: 'https://partner.example.test/done' },
    });
    expect(submitter.submission).toMatchObject({ source: 'link', templateId: template.id });
    const fields = submitter.submission.templateFields as { name: string; uuid: string; readonly?: boolean }[];
    const company = fields.find((f) => f.name === 'Company')!;
    expect(company.readonly).toBe(true);
    expect(submitter.values).toEqual({
      [company.uuid]: 'FBI',
      [fields.find((f) => f.name === 'Full Name')!.uuid]: 'Dana Scully',
    });
    // Over the API it reads as any submission, made by the template's author.
    const read = await api('GET', `/submissions/${submitter.submissionId}`);
    expect(read.json).toMatchObject({ source: 'link', created_by_user: { email: 'alice@template-links.test' } });

    // submission.created reached the account's webhook through the outbox; no email was sent.
    await receiver.waitFor((requests) =>
      requests.some((r) => r.json?.event_type === 'submission.created' && r.json.data.id === submitter.submissionId),
    );
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(smtp.messages.filter((m) => m.envelope.rcptTo.includes('dana@example.test'))).toEqual([]);

    // The same signer again (same email, external id and address): the same form, nothing new.
    const before = await submissionCount();
    const again = await start(template.slug, { email: 'dana@example.test', externalId: 'crm-42' });
    expect(again.body.data.startTemplateForm).toEqual({ ...started, created: false });
    expect(await submissionCount()).toBe(before);
    // Another external id is another signer.
    const other = await start(template.slug, { email: 'dana@example.test', externalId: 'crm-43' });
    expect(other.body.data.startTemplateForm.created).toBe(true);
    expect(other.body.data.startTemplateForm.slug).not.toBe(started.slug);
  });

  it('a declined or archived submission is not found again: the signer starts a new one', async () => {
    const template = await createTemplate(ONE_ROLE);
    const first = (await start(template.slug, { email: 'eve@example.test' })).body.data.startTemplateForm;
    const declined = await graphql(
      t.url,
      'mutation ($slug: String!) { declineSigningForm(slug: $slug, reason: "No") { state } }',
      {
        variables: { slug: first.slug },
      },
    );
    expect(declined.body.data.declineSigningForm.state).toBe('DECLINED');
    const second = (await start(template.slug, { email: 'eve@example.test' })).body.data.startTemplateForm;
    expect(second.created).toBe(true);
    const submitter = await t.db.submitter.findUniqueOrThrow({ where: { slug: second.slug } });
    expect((await api('DELETE', `/submissions/${submitter.submissionId}`)).status).toBe(200);
    await t.db.templateLinkStart.deleteMany(); // a third start of the template: past this suite's limit of 2
    const third = (await start(template.slug, { email: 'eve@example.test' })).body.data.startTemplateForm;
    expect(third.created).toBe(true);
    expect(new Set([first.slug, second.slug, third.slug]).size).toBe(3);
  });

  it('names the role of a template with several; refuses what it must, writing nothing', async () => {
    const twoRoles = await createTemplate([
      { name: 'Tenant Name', role: 'Tenant', areas: [{ x: 60, y: 120, w: 240, h: 24, page: 1 }] },
      { name: 'Tenant Photo', type: 'image', role: 'Tenant', areas: [{ x: 60, y: 300, w: 100, h: 100, page: 1 }] },
      { name: 'Landlord Name', role: 'Landlord', areas: [{ x: 60, y: 160, w: 240, h: 24, page: 1 }] },
    ]);
    const before = await submissionCount();
    const refused = async (slug: string, input: Record<string, unknown>, code: string, message: RegExp) => {
      const answer = await start(slug, input);
      expect(answer.body.errors?.[0], JSON.stringify(answer.body)).toMatchObject({ extensions: { code } });
      expect(answer.body.errors![0]!.message).toMatch(message);
    };
    await refused(twoRoles.slug, { email: 'x@example.test' }, 'VALIDATION', /multiple signers/);
    await refused(twoRoles.slug, { email: 'x@example.test', role: 'Guarantor' }, 'VALIDATION', /not a role/);
    await refused(twoRoles.slug, { name: 'No Email' }, 'VALIDATION', /^email is required$/);
    await refused(twoRoles.slug, { email: 'a@x.test, b@x.test', role: 'Tenant' }, 'VALIDATION', /^email is invalid$/);
    await refused(
      twoRoles.slug,
      { email: 'x@example.test', role: 'tenant', values: { 'Tenant Photo': 'https://example.com/a.png' } },
      'VALIDATION',
      /values\.Tenant Photo: a image field cannot be prefilled/,
    );
    await refused(
      twoRoles.slug,
      { email: 'x@example.test', role: 'Tenant', name: 'n'.repeat(256) },
      'VALIDATION',
      /too long/,
    );
    await refused('NoSuchTemplate', { email: 'x@example.test' }, 'NOT_FOUND', /Not found/);
    // Not shared, archived: not found, as DocuSeal's link answers.
    const unshared = await createTemplate(ONE_ROLE, { shared_link: false });
    await refused(unshared.slug, { email: 'x@example.test' }, 'NOT_FOUND', /Not found/);
    const archived = await createTemplate(ONE_ROLE);
    expect((await api('DELETE', `/templates/${archived.id}`)).status).toBe(200);
    await refused(archived.slug, { email: 'x@example.test' }, 'NOT_FOUND', /Not found/);
    expect(await submissionCount()).toBe(before);

    // The role named (any case): the submission has that one party.
    const landlord = await start(twoRoles.slug, { email: 'lord@example.test', role: 'LANDLORD' });
    const submitter = await t.db.submitter.findUniqueOrThrow({
      where: { slug: landlord.body.data.startTemplateForm.slug },
      include: { submission: { include: { submitters: true } } },
    });
    const roles = submitter.submission.templateSubmitters as { uuid: string; name: string }[];
    expect(roles.find((r) => r.uuid === submitter.roleUuid)?.name).toBe('Landlord');
    expect(submitter.submission.submitters).toHaveLength(1);
  });

  it('the page at /d/{slug} is served for shared templates only, with the pages’ CSP', async () => {
    const shared = await createTemplate(ONE_ROLE);
    const unshared = await createTemplate(ONE_ROLE, { shared_link: false });
    const page = await fetch(`${t.url}/d/${shared.slug}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`data-template-slug="${shared.slug}"`);
    expect(html).toContain('data-template-name="Agreement"');
    expect(html).toContain('data-embed-origins="https://partner.example.test http://localhost:5173"');
    expect(page.headers.get('content-security-policy')).toMatch(
      /; frame-ancestors 'self' https:\/\/partner\.example\.test http:\/\/localhost:5173$/,
    );
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    for (const slug of [unshared.slug, 'NoSuchTemplate', '..%2f..']) {
      const missing = await fetch(`${t.url}/d/${slug}`);
      expect(missing.status, slug).toBe(404);
      expect(await missing.text()).toContain('Form not found');
    }
    // The signer's page carries the same policy.
    const started = (await start(shared.slug, { email: 'csp@example.test' })).body.data.startTemplateForm;
    const form = await fetch(started.embedSrc);
    expect(form.headers.get('content-security-policy')).toBe(page.headers.get('content-security-policy'));
  });
});

describe('limits of template links', () => {
  it('per template: past TEMPLATE_LINK_STARTS_PER_TEMPLATE an hour, 429 "Too many attempts."', async () => {
    const a = await createTemplate(ONE_ROLE);
    const b = await createTemplate(ONE_ROLE);
    for (const email of ['one@a.test', 'two@a.test'])
      expect((await start(a.slug, { email })).body.data.startTemplateForm.created).toBe(true);
    const before = await submissionCount();
    const third = await start(a.slug, { email: 'three@a.test' });
    expect(third.body.errors?.[0]).toMatchObject({
      message: 'Too many attempts.',
      extensions: { code: 'RATE_LIMITED' },
    });
    expect(await submissionCount()).toBe(before);
    // A returning signer is not a new submission: still let in.
    expect((await start(a.slug, { email: 'one@a.test' })).body.data.startTemplateForm.created).toBe(false);
    // Another template has its own count.
    expect((await start(b.slug, { email: 'one@b.test' })).body.data.startTemplateForm.created).toBe(true);
  });

  it('per address: past TEMPLATE_LINK_STARTS_PER_IP an hour, whatever the template', async () => {
    const templates = await Promise.all([1, 2, 3, 4, 5, 6].map(() => createTemplate(ONE_ROLE)));
    for (const [i, template] of templates.slice(0, 5).entries())
      expect((await start(template.slug, { email: `p${i}@ip.test` })).body.data.startTemplateForm.created).toBe(true);
    const sixth = await start(templates[5]!.slug, { email: 'p5@ip.test' });
    expect(sixth.body.errors?.[0]).toMatchObject({
      message: 'Too many attempts.',
      extensions: { code: 'RATE_LIMITED' },
    });
  });

  it('holds under a burst: of 12 concurrent starts, exactly the limit get through', async () => {
    const templates = await Promise.all([1, 2, 3, 4, 5, 6].map(() => createTemplate(ONE_ROLE)));
    const before = await submissionCount();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => start(templates[i % 6]!.slug, { email: `burst${i}@ip.test` })),
    );
    const created = answers.filter((a) => a.body.data?.startTemplateForm?.created === true);
    const limited = answers.filter((a) => a.body.errors?.[0]?.extensions?.code === 'RATE_LIMITED');
    expect(created).toHaveLength(5);
    expect(limited).toHaveLength(7);
    expect((await submissionCount()) - before).toBe(5);
  });

  it('counts per hour: rows of past hours go with the next count', async () => {
    const template = await createTemplate(ONE_ROLE);
    const old = new Date(Date.now() - 3 * 3600_000);
    await t.db.templateLinkStart.create({ data: { key: 'ip:203.0.113.9', windowStart: old, count: 99 } });
    expect((await start(template.slug, { email: 'hourly@example.test' })).body.data.startTemplateForm.created).toBe(
      true,
    );
    const rows = await t.db.templateLinkStart.findMany({ orderBy: { key: 'asc' } });
    expect(rows.map((r) => [r.key.replace(/^ip:.*/, 'ip'), r.count])).toEqual([
      ['ip', 1],
      [`template:${template.id}`, 1],
    ]);
  });
});

describe('/js/form.js, the embedded form', () => {
  it('is a classic script any site may include, revalidated by its ETag', async () => {
    const response = await fetch(`${t.url}/js/form.js`, { headers: { origin: 'https://elsewhere.example' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const body = await response.text();
    expect(body).toContain('signet-form');
    expect(body).toContain('docuseal-form');
    expect(body).not.toMatch(/^\s*(import|export)\s/m);
    const etag = response.headers.get('etag')!;
    expect((await fetch(`${t.url}/js/form.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
  });
});

describe('EMBED_ORIGINS', () => {
  const base = { NODE_ENV: 'test' };
  it('defaults to any site; takes origins as browsers send them; refuses anything else', () => {
    expect(loadConfig(base).embedOrigins).toEqual(['*']);
    expect(loadConfig({ ...base, EMBED_ORIGINS: '*' }).embedOrigins).toEqual(['*']);
    expect(loadConfig({ ...base, EMBED_ORIGINS: 'https://a.example.test, *' }).embedOrigins).toEqual(['*']);
    expect(
      loadConfig({
        ...base,
        EMBED_ORIGINS: 'https://App.Example.test:443/,http://localhost:5173, https://app.example.test',
      }).embedOrigins,
    ).toEqual(['https://app.example.test', 'http://localhost:5173']);
    for (const bad of ['https://a.example.test/path', 'ftp://a.example.test', 'a.example.test', "'self'"]) {
      expect(() => loadConfig({ ...base, EMBED_ORIGINS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base, EMBED_ORIGINS: bad })).toThrow(`EMBED_ORIGINS: "${bad}" is not an origin`);
    }
    expect(loadConfig(base).templateLinkStarts).toEqual({ perIp: 20, perTemplate: 1000 });
    expect(() => loadConfig({ ...base, TEMPLATE_LINK_STARTS_PER_IP: '0' })).toThrow(ConfigError);
  });
});
