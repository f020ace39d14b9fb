/**
 * Input limits and user patterns (issue 12 §1 "Huge values", "ReDoS"; src/limits.ts,
 * src/templates/field-pattern.ts; docs/security.md "Input limits"), against a real server:
 * every over-long string, over-long list and over-large JSON object is a 422 (REST, DocuSeal's
 * `{"error": ...}`) or a VALIDATION error (GraphQL) naming the input, with nothing written; a
 * field's `validation.pattern` runs on RE2, so `(a+)+$` costs microseconds; patterns RE2 cannot
 * run are refused when the template is created.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { compileFieldPattern, fieldPatternProblem } from '../src/templates/field-pattern.ts';
import { completionValues } from '../src/signing-form/field-values.ts';
import type { Field } from '../src/templates/fields.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

const PDF = base64(fixturePdf('documenso-letter-size.pdf'));
const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);
const gql = (query: string, variables: Record<string, unknown>, key: string | undefined = alice.apiKey) =>
  graphql(t.url, query, { key, variables }).then(
    ({ body }) => body as { data?: any; errors?: { message: string; extensions?: Record<string, any> }[] },
  );

/** A text field of the "Signer" role at the top of page 1 (PDF points). */
const textField = (name: string, extra: Record<string, unknown> = {}, index = 0) => ({
  name,
  role: 'Signer',
  areas: [{ x: 72, y: 72 + index * 30, w: 300, h: 24, page: 1 }],
  ...extra,
});

const createTemplate = (body: Record<string, unknown>) =>
  api('POST', '/templates/pdf', { documents: [{ name: 'doc', file: PDF }], ...body });

const counts = async () => ({
  templates: await t.db.template.count(),
  submissions: await t.db.submission.count(),
  submitters: await t.db.submitter.count(),
});

/** One submission of `template` for one signer; its slug. */
async function signerSlug(template = templateId): Promise<string> {
  const { status, json } = await api('POST', '/submissions', {
    template_id: template,
    send_email: false,
    submitters: [{ role: 'Signer', email: 'sam@signer.test' }],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0].slug;
}

const FORM_FIELDS = 'slug state fields { uuid name value }';
const loadForm = async (slug: string) =>
  (await gql(`query($slug: String!) { signingForm(slug: $slug) { ${FORM_FIELDS} } }`, { slug }, undefined)).data
    .signingForm;
const complete = async (slug: string, values: unknown) => {
  await acceptConsentViaApi(t.url, slug);
  return gql(
    `mutation($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { ${FORM_FIELDS} } }`,
    { slug, values },
    undefined,
  );
};
const save = (slug: string, values: unknown) =>
  gql(
    `mutation($slug: String!, $values: JSON!) { saveSigningFormValues(slug: ` +
      `$slug, values: $values) { ${FORM_FIELDS} } }`,
    { slug, values },
    undefined,
  );

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Limits Inc', email: 'alice@limits.test' });
  const template = await createTemplate({
    name: 'Limits',
    fields: [
      textField('Full Name'),
      textField('Code', { validation: { pattern: '(a+)+$' }, required: false }, 1),
      ...Array.from({ length: 7 }, (_, i) => textField(`Note ${i + 1}`, { required: false }, i + 2)),
    ],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  templateId = template.json.id;
});
afterAll(async () => {
  await t?.close();
});

describe('template strings and lists', () => {
  it(
    'REST: a 2 MB template name is a 422 naming it, fast, and nothing is written; ' + '255 characters are accepted',
    async () => {
      const before = await counts();
      const started = performance.now();
      const { status, json } = await createTemplate({ name: 'n'.repeat(2_000_000) });
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(status).toBe(422);
      expect(json).toEqual({ error: 'name is too long (maximum is 255 characters).' });
      expect(await counts()).toEqual(before);

      const ok = await createTemplate({ name: 'n'.repeat(255), fields: [textField('Name')] });
      expect(ok.status, JSON.stringify(ok.json)).toBe(200);
      expect(ok.json.name).toHaveLength(255);
    },
  );

  it(
    'GraphQL: an over-long template name is a VALIDATION error with its path, ' + 'before the documents are read',
    async () => {
      const before = await counts();
      const body = await gql(
        'mutation($input: CreateTemplateFromFileInput!) { createTemplateFromPdf(input: $input) { template { id } } }',
        // The document is junk: the name is refused first, so it is never looked at.
        { input: { name: 'n'.repeat(256), documents: [{ name: 'doc', file: 'not a pdf' }] } },
      );
      expect(body.errors?.[0]?.message).toBe('name is too long (maximum is 255 characters).');
      expect(body.errors?.[0]?.extensions).toMatchObject({
        code: 'VALIDATION',
        details: { path: 'name', maximum: 255 },
      });
      expect(await counts()).toEqual(before);
    },
  );

  it('names each over-long part of a template by its DocuSeal key and path', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ external_id: 'e'.repeat(256) }, 'external_id is too long (maximum is 255 characters).'],
      [{ folder_name: 'f'.repeat(1001) }, 'folder_name is too long (maximum is 1000 characters).'],
      [
        { folder_name: Array.from({ length: 11 }, (_, i) => `L${i}`).join(' / ') },
        'folder_name has too many levels (maximum is 10).',
      ],
      [
        { documents: [{ name: 'd'.repeat(256), file: PDF }] },
        'documents[0].name is too long (maximum is 255 characters).',
      ],
      [
        { documents: Array.from({ length: 51 }, () => ({ name: 'doc', file: 'junk' })) },
        'documents has too many entries (maximum is 50).',
      ],
      [{ fields: [textField('x'.repeat(256))] }, 'fields[0].name is too long (maximum is 255 characters).'],
      [
        { fields: [textField('Title', { title: 't'.repeat(1001) })] },
        'fields[0].title is too long (maximum is 1000 characters).',
      ],
      [
        { fields: [textField('Text', { default_value: 'v'.repeat(10_001) })] },
        'fields[0].default_value is too long (maximum is 10000 characters).',
      ],
      [
        { fields: [textField('Pick', { type: 'select', options: Array.from({ length: 501 }, (_, i) => `o${i}`) })] },
        'fields[0].options has too many entries (maximum is 500).',
      ],
      [
        { fields: [textField('Prefs', { preferences: { font: 'x'.repeat(5000) } })] },
        'fields[0].preferences is too large (maximum is 4096 characters as JSON).',
      ],
      [
        { fields: Array.from({ length: 501 }, (_, i) => textField(`F${i}`)) },
        'fields has too many entries (maximum is 500).',
      ],
    ];
    const before = await counts();
    for (const [body, error] of cases) {
      const { status, json } = await createTemplate({ name: 'Parts', fields: [textField('Name')], ...body });
      expect({ status, json, body: Object.keys(body) }).toEqual({
        status: 422,
        json: { error },
        body: Object.keys(body),
      });
    }
    expect(await counts()).toEqual(before);
  });

  it('updates, clones and merges refuse over-long names and lists too', async () => {
    const path = `/templates/${templateId}`;
    expect(await api('PUT', path, { name: 'n'.repeat(256) })).toEqual({
      status: 422,
      json: { error: 'name is too long (maximum is 255 characters).' },
    });
    expect(await api('PUT', path, { roles: Array.from({ length: 51 }, (_, i) => `Role ${i}`) })).toEqual({
      status: 422,
      json: { error: 'roles has too many entries (maximum is 50).' },
    });
    expect(await api('PUT', path, { roles: ['r'.repeat(256)] })).toEqual({
      status: 422,
      json: { error: 'roles[0] is too long (maximum is 255 characters).' },
    });
    expect(await api('POST', `${path}/clone`, { external_id: 'e'.repeat(256) })).toEqual({
      status: 422,
      json: { error: 'external_id is too long (maximum is 255 characters).' },
    });
    expect(
      await api('POST', '/templates/merge', { template_ids: Array.from({ length: 21 }, () => templateId) }),
    ).toEqual({
      status: 422,
      json: { error: 'template_ids has too many entries (maximum is 20).' },
    });
    const template = await api('GET', path);
    expect(template.json.name).toBe('Limits');
  });

  it('list filters are bounded: a 256-character q is a 422', async () => {
    const { status, json } = await api('GET', `/submissions?q=${'q'.repeat(256)}`);
    expect({ status, json }).toEqual({ status: 422, json: { error: 'q is too long (maximum is 255 characters).' } });
    expect((await api('GET', `/templates?q=${'q'.repeat(255)}`)).status).toBe(200);
  });
});

describe('field values', () => {
  it('REST: an over-long text value in `values` is a 422 naming the value, and no submission is written', async () => {
    const before = await counts();
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Signer', email: 'sam@signer.test', values: { 'Full Name': 'x'.repeat(1_000_000) } }],
    });
    expect({ status, json }).toEqual({
      status: 422,
      json: { error: 'submitters[0].values.Full Name is too long (maximum is 10000 characters).' },
    });
    expect(await counts()).toEqual(before);

    const ok = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'sam@signer.test', values: { 'Full Name': 'x'.repeat(10_000) } }],
    });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
  });

  it('REST: a party’s values together are at most 64 KiB of JSON', async () => {
    const before = await counts();
    const values = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`Note ${i + 1}`, 'n'.repeat(10_000)]));
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Signer', email: 'sam@signer.test', values }],
    });
    expect({ status, json }).toEqual({
      status: 422,
      json: { error: 'submitters[0].values is too large (maximum is 65536 characters as JSON).' },
    });
    expect(await counts()).toEqual(before);
  });

  it(
    'GraphQL completeSigningForm: a 1 MB value is a VALIDATION error for that field; ' +
      'nothing is saved or completed',
    async () => {
      const slug = await signerSlug();
      const form = await loadForm(slug);
      const fullName = form.fields.find((f: any) => f.name === 'Full Name').uuid;
      const body = await complete(slug, { [fullName]: 'x'.repeat(1_000_000) });
      expect(body.errors?.[0]?.message).toBe('Full Name is too long (maximum is 10000 characters).');
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION', fieldUuid: fullName });
      const submitter = await t.db.submitter.findUniqueOrThrow({
        where: { slug },
        select: { completedAt: true, values: true },
      });
      expect(submitter).toEqual({ completedAt: null, values: {} });
      // The same value at the limit is taken.
      const done = await complete(slug, { [fullName]: 'x'.repeat(10_000) });
      expect(done.errors).toBeUndefined();
      expect(done.data.completeSigningForm.state).toBe('COMPLETED');
    },
  );

  it('GraphQL saveSigningFormValues: values that would exceed 64 KiB together are refused', async () => {
    const slug = await signerSlug();
    const form = await loadForm(slug);
    const uuidOf = (name: string) => form.fields.find((f: any) => f.name === name).uuid;
    const first = await save(
      slug,
      Object.fromEntries([1, 2, 3, 4, 5, 6].map((i) => [uuidOf(`Note ${i}`), 'n'.repeat(10_000)])),
    );
    expect(first.errors).toBeUndefined();
    const second = await save(slug, { [uuidOf('Note 7')]: 'n'.repeat(10_000) });
    expect(second.errors?.[0]?.message).toBe('values is too large (maximum is 65536 characters as JSON).');
    expect(second.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    const stored = await t.db.submitter.findUniqueOrThrow({ where: { slug }, select: { values: true } });
    expect(Object.keys(stored.values as object)).toHaveLength(6);
  });

  it('a decline reason is at most 10,000 characters', async () => {
    const slug = await signerSlug();
    const body = await gql(
      'mutation($slug: String!, $reason: String!) { declineSigningForm(slug: $slug, reason: $reason) { state } }',
      { slug, reason: 'r'.repeat(10_001) },
      undefined,
    );
    expect(body.errors?.[0]?.message).toBe('reason is too long (maximum is 10000 characters).');
    expect((await t.db.submitter.findUniqueOrThrow({ where: { slug } })).declinedAt).toBeNull();
  });
});

describe('submissions: submitters, metadata, messages', () => {
  it('metadata over 64 KiB, or nested deeper than 10, is a 422 naming it; nothing is written', async () => {
    const before = await counts();
    const big = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Signer', email: 's@x.test', metadata: { blob: 'm'.repeat(70_000) } }],
    });
    expect(big).toEqual({
      status: 422,
      json: { error: 'submitters[0].metadata is too large (maximum is 65536 characters as JSON).' },
    });
    // 100,000 levels: deeper than any recursive walk (or
    // JSON.stringify) of it could go; written by hand for that reason.
    const deep = `${'{"deep":'.repeat(100_000)}{"leaf":true}${'}'.repeat(100_000)}`;
    const nested = await fetch(`${t.url}/api/submissions`, {
      method: 'POST',
      headers: { 'X-Auth-Token': alice.apiKey, 'content-type': 'application/json' },
      body: `{"template_id":${templateId},"submitters":[{"role":"Signer","email":"s@x.test","metadata":${deep}}]}`,
    });
    expect({ status: nested.status, json: await nested.json() }).toEqual({
      status: 422,
      json: { error: 'submitters[0].metadata is nested too deeply (maximum depth is 10).' },
    });
    expect(await counts()).toEqual(before);
  });

  it('more than 50 submitters is a 422, over REST and GraphQL', async () => {
    const before = await counts();
    const submitters = Array.from({ length: 51 }, (_, i) => ({ email: `s${i}@x.test` }));
    expect(await api('POST', '/submissions', { template_id: templateId, submitters })).toEqual({
      status: 422,
      json: { error: 'submitters has too many entries (maximum is 50).' },
    });
    const body = await gql(
      'mutation($input: CreateSubmissionsInput!) { createSubmissions(input: $input) { submissionIds } }',
      { input: { templateId, submitters } },
    );
    expect(body.errors?.[0]?.message).toBe('submitters has too many entries (maximum is 50).');
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      details: { path: 'submitters', maximum: 50 },
    });
    expect(await counts()).toEqual(before);
  });

  it('/submissions/emails: at most 100 addresses, and a 300,000-character word is read in linear time', async () => {
    const before = await counts();
    const emails = Array.from({ length: 101 }, (_, i) => `p${i}@x.test`).join(', ');
    expect(await api('POST', '/submissions/emails', { template_id: templateId, emails })).toEqual({
      status: 422,
      json: { error: 'emails has too many entries (maximum is 100).' },
    });
    // Searching such a word with /[^sep]+@[^sep]+/g took time quadratic in its length (40,000 characters: 1.5 s).
    const started = performance.now();
    const long = await api('POST', '/submissions/emails', {
      template_id: templateId,
      emails: `${'a'.repeat(300_000)}@x.test`,
    });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(long).toEqual({ status: 422, json: { error: 'emails[0].email is too long (maximum is 255 characters).' } });
    expect(await counts()).toEqual(before);
  });

  it(
    'message bodies, names, emails and redirect URLs have maxima; ' + 'PUT /submitters checks its JSON inputs',
    async () => {
      const create = (body: Record<string, unknown>, submitter: Record<string, unknown> = {}) =>
        api('POST', '/submissions', {
          template_id: templateId,
          submitters: [{ role: 'Signer', email: 's@x.test', ...submitter }],
          ...body,
        });
      expect(await create({ message: { subject: 'Hi', body: 'b'.repeat(20_001) } })).toEqual({
        status: 422,
        json: { error: 'message.body is too long (maximum is 20000 characters).' },
      });
      expect(await create({}, { name: 'n'.repeat(256) })).toEqual({
        status: 422,
        json: { error: 'submitters[0].name is too long (maximum is 255 characters).' },
      });
      expect(await create({}, { email: `${'e'.repeat(250)}@x.test` })).toEqual({
        status: 422,
        json: { error: 'submitters[0].email is too long (maximum is 255 characters).' },
      });
      expect(await create({ completed_redirect_url: `https://x.test/${'p'.repeat(2048)}` })).toEqual({
        status: 422,
        json: { error: 'completed_redirect_url is too long (maximum is 2048 characters).' },
      });

      const slug = await signerSlug();
      const { id } = await t.db.submitter.findUniqueOrThrow({ where: { slug }, select: { id: true } });
      expect(await api('PUT', `/submitters/${id}`, { name: 'n'.repeat(256) })).toEqual({
        status: 422,
        json: { error: 'name is too long (maximum is 255 characters).' },
      });
      expect(await api('PUT', `/submitters/${id}`, { values: { 'Full Name': 'x'.repeat(10_001) } })).toEqual({
        status: 422,
        json: { error: 'submitter.values.Full Name is too long (maximum is 10000 characters).' },
      });
      const submitter = await t.db.submitter.findUniqueOrThrow({ where: { id }, select: { name: true, values: true } });
      expect(submitter).toEqual({ name: null, values: {} });
    },
  );

  it('a webhook URL is at most 2,048 characters (GraphQL)', async () => {
    const body = await gql(
      'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret } }',
      {
        input: { url: `https://hooks.example.com/${'p'.repeat(2048)}` },
      },
    );
    expect(body.errors?.[0]?.message).toBe('url is too long (maximum is 2048 characters).');
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION', details: { path: 'url', maximum: 2048 } });
    expect(await t.db.webhookEndpoint.count()).toBe(0);
  });
});

describe('validation.pattern runs on RE2', () => {
  it('(a+)+$ against a 35-character value that does not match: the normal error, in milliseconds', async () => {
    const field: Field = {
      uuid: 'code',
      submitter_uuid: 'signer',
      name: 'Code',
      type: 'text',
      required: true,
      preferences: {},
      validation: { pattern: '(a+)+$' },
      areas: [],
    };
    const started = performance.now();
    expect(() => completionValues([field], 'signer', { code: `${'a'.repeat(34)}!` })).toThrow('Code is invalid');
    // Well under a second even on a busy machine; a backtracking engine needs about 2^34 steps (minutes).
    expect(performance.now() - started).toBeLessThan(1000);
    expect(completionValues([field], 'signer', { code: 'a'.repeat(34) })).toEqual({ code: 'a'.repeat(34) });

    // Through the server: the signer's completion is refused as usual, and /health is not held up.
    const slug = await signerSlug();
    const form = await loadForm(slug);
    const uuidOf = (name: string) => form.fields.find((f: any) => f.name === name).uuid;
    const requestStarted = performance.now();
    const [body, health] = await Promise.all([
      complete(slug, { [uuidOf('Full Name')]: 'Sam', [uuidOf('Code')]: `${'a'.repeat(34)}!` }),
      fetch(`${t.url}/health`).then((r) => r.status),
    ]);
    expect(performance.now() - requestStarted).toBeLessThan(2_000);
    expect(health).toBe(200);
    expect(body.errors?.[0]).toMatchObject({
      message: 'Code is invalid',
      extensions: { code: 'VALIDATION', fieldUuid: uuidOf('Code') },
    });
    expect((await t.db.submitter.findUniqueOrThrow({ where: { slug } })).completedAt).toBeNull();
  });

  it('a backreference or a lookaround is a 422 at template creation, naming the field', async () => {
    const before = await counts();
    for (const [pattern, reason] of [
      ['(a)\\1', 'invalid escape sequence: `\\1`'],
      ['(?<n>a)\\k<n>', '`\\k<name>` is a backreference'],
      ['(?=a)a', 'invalid or unsupported Perl syntax: `(?=`'],
    ]) {
      const { status, json } = await createTemplate({
        name: 'Patterns',
        fields: [textField('Name'), textField('Code', { validation: { pattern } }, 1)],
      });
      expect(status).toBe(422);
      expect(json.error).toBe(
        `fields[1].validation.pattern is not supported: ${reason} (patterns run on RE2, in linear time: lookahead, ` +
          `lookbehind and backreferences are not available).`,
      );
    }
    const body = await gql(
      'mutation($input: CreateTemplateFromFileInput!) { createTemplateFromPdf(input: $input) { template { id } } }',
      {
        input: {
          documents: [{ name: 'doc', file: PDF }],
          fields: [
            { name: 'Code', areas: [{ x: 72, y: 72, w: 100, h: 20, page: 1 }], validation: { pattern: '(a)\\1' } },
          ],
        },
      },
    );
    expect(body.errors?.[0]?.extensions).toMatchObject({
      code: 'VALIDATION',
      details: { path: 'fields[0].validation.pattern' },
    });
    expect(await counts()).toEqual(before);
  });

  it(
    'patterns too long or compiling too large are refused; ' + 'submission field settings are checked the same way',
    async () => {
      const long = await createTemplate({
        name: 'P',
        fields: [textField('Code', { validation: { pattern: 'a'.repeat(1001) } })],
      });
      expect(long).toEqual({
        status: 422,
        json: { error: 'fields[0].validation.pattern is too long (maximum is 1000 characters).' },
      });
      const large = await createTemplate({
        name: 'P',
        fields: [textField('Code', { validation: { pattern: '(?:a?){999}a{999}' } })],
      });
      expect(large.status).toBe(422);
      expect(large.json.error).toMatch(
        /^fields\[0\]\.validation\.pattern is too complex: it compiles to about 3000 steps \(maximum is 1000\)/,
      );

      const before = await counts();
      const override = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [
          { role: 'Signer', email: 's@x.test', fields: [{ name: 'Full Name', validation_pattern: '(?<=a)b' }] },
        ],
      });
      expect(override.status).toBe(422);
      expect(override.json.error).toMatch(/^submitters\[0\]\.fields\[0\]\.validation_pattern is not supported: /);
      expect(await counts()).toEqual(before);
    },
  );

  it(
    'reads JavaScript pattern syntax (\\u escapes, named groups) and judges whole values, ' +
      'as the HTML pattern attribute',
    () => {
      expect(fieldPatternProblem('(?<year>\\d{4})-\\u0030\\d')).toBeNull();
      const date = compileFieldPattern('(?<year>\\d{4})-\\u0030\\d')!;
      expect([date.test('2026-05'), date.test('2026-15'), date.test('x2026-05')]).toEqual([true, false, false]);
      const either = compileFieldPattern('a|b')!;
      expect([either.test('a'), either.test('b'), either.test('ab')]).toEqual([true, true, false]);
      // A 10,000-character value against the largest allowed pattern: linear, well under a second.
      const largest = compileFieldPattern('(?:a?){300}a{300}')!;
      const started = performance.now();
      largest.test('a'.repeat(10_000));
      expect(performance.now() - started).toBeLessThan(500);
    },
  );
});
