/**
 * Issue 15: no request property of DocuSeal's OpenAPI is accepted and silently ignored. One test per
 * property that was: POST /submissions' `go_to_last`, `require_email_2fa`, `require_phone_2fa`
 * (top level and per submitter, as DocuSeal's Submitters.normalize_preferences reads them) and a
 * `fields[]` entry's `validation` object (create_from_submitters.rb assign_field_attrs), over REST
 * and GraphQL `createSubmissions`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@honoured.test' });
  const { status, json } = await api('POST', '/templates/pdf', {
    name: 'Honoured',
    documents: [{ name: 'agreement', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Code', role: 'Client', areas: [{ x: 72, y: 72, w: 150, h: 20, page: 1 }] },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 300, w: 150, h: 20, page: 1 }] },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
});

/** POST /submissions that must succeed (answer checked against the OpenAPI schema). */
async function create(body: Record<string, unknown>) {
  const { status, json } = await api('POST', '/submissions', { template_id: templateId, send_email: false, ...body });
  expect(status, JSON.stringify(json)).toBe(200);
  expect(openApiErrors('post', '/submissions', json)).toEqual([]);
  return json as { id: number; role: string; slug: string; preferences: Record<string, unknown> }[];
}

const FORM = /* GraphQL */ `
  query Form($slug: String!) {
    signingForm(slug: $slug) { goToLast fields { name validation } }
  }
`;

async function formOf(slug: string) {
  const { body } = await graphql(t.url, FORM, { variables: { slug } });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data.signingForm as { goToLast: boolean; fields: { name: string; validation: unknown }[] };
}

describe('POST /submissions: go_to_last and the 2FA flags', () => {
  it('go_to_last is stored in preferences (top level for all, a party’s own first) and opens the form', async () => {
    const [client, manager] = await create({
      go_to_last: true,
      submitters: [
        { role: 'Client', email: 'c@honoured.test' },
        { role: 'Manager', email: 'm@honoured.test', go_to_last: false },
      ],
    });
    expect(client!.preferences).toMatchObject({ go_to_last: true });
    expect(manager!.preferences).toMatchObject({ go_to_last: false });
    expect((await api('GET', `/submitters/${client!.id}`)).json.preferences.go_to_last).toBe(true);
    // A form never opened opens at the top unless go_to_last says otherwise.
    expect((await formOf(client!.slug)).goToLast).toBe(true);
    expect((await formOf(manager!.slug)).goToLast).toBe(false);
  });

  it('require_email_2fa / require_phone_2fa: true is refused (422, nothing stored), false is stored', async () => {
    const before = await t.db.submission.count({ where: { accountId: alice.accountId } });
    for (const key of ['require_email_2fa', 'require_phone_2fa']) {
      const top = await api('POST', '/submissions', {
        template_id: templateId,
        [key]: true,
        submitters: [{ role: 'Client', email: 'c@honoured.test' }],
      });
      expect(top.status).toBe(422);
      expect(top.json).toEqual({ error: `${key} is not supported: the signing form has no one-time codes` });
      const own = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [{ role: 'Client', email: 'c@honoured.test', [key]: 'true' }],
      });
      expect(own.status).toBe(422);
      expect(own.json).toEqual({
        error: `${key} is not supported: the signing form has no one-time codes in \`submitters[0]\`.`,
      });
    }
    expect(await t.db.submission.count({ where: { accountId: alice.accountId } })).toBe(before);
    const [client] = await create({
      require_email_2fa: false,
      submitters: [{ role: 'Client', email: 'c@honoured.test', require_phone_2fa: false }],
    });
    expect(client!.preferences).toMatchObject({ require_email_2fa: false, require_phone_2fa: false });
  });
});

describe('POST /submissions: fields[].validation', () => {
  it('is merged into the field’s validation, validation_pattern on top', async () => {
    const [client] = await create({
      submitters: [
        {
          role: 'Client',
          email: 'c@honoured.test',
          fields: [{ name: 'Code', validation: { pattern: '^[A-Z]{4}$', message: 'Four capitals', min: 1 } }],
        },
      ],
    });
    const code = (await formOf(client!.slug)).fields.find((f) => f.name === 'Code')!;
    expect(code.validation).toEqual({ pattern: '^[A-Z]{4}$', message: 'Four capitals', min: 1 });
    const [other] = await create({
      submitters: [
        {
          role: 'Client',
          email: 'c@honoured.test',
          fields: [{ name: 'Code', validation: { message: 'kept', min: 2 }, validation_pattern: '^\\d+$' }],
        },
      ],
    });
    const merged = (await formOf(other!.slug)).fields.find((f) => f.name === 'Code')!;
    expect(merged.validation).toEqual({ message: 'kept', min: 2, pattern: '^\\d+$' });
  });

  it('a pattern RE2 cannot run is refused, naming the place', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Client', email: 'c@honoured.test', fields: [{ name: 'Code', validation: { pattern: '(a' } }] },
      ],
    });
    expect(status).toBe(422);
    expect(json.error).toContain('submitters[0].fields[0].validation.pattern');
  });
});

describe('GraphQL createSubmissions', () => {
  it('takes goToLast, the 2FA flags and a field’s validation as REST does', async () => {
    const CREATE = /* GraphQL */ `
      mutation($input: CreateSubmissionsInput!) {
        createSubmissions(input: $input) { submissions { submitters { slug preferences } } }
      }
    `;
    const run = (input: Record<string, unknown>) =>
      graphql(t.url, CREATE, { key: alice.apiKey, variables: { input: { templateId, sendEmail: false, ...input } } });
    const { body } = await run({
      goToLast: true,
      requireEmail2fa: false,
      submitters: [
        {
          role: 'Client',
          email: 'g@honoured.test',
          requirePhone2fa: false,
          fields: [{ name: 'Code', validation: { pattern: '^x$', message: 'x only' } }],
        },
      ],
    });
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    const submitter = body.data.createSubmissions.submissions[0].submitters[0];
    expect(submitter.preferences).toMatchObject({
      go_to_last: true,
      require_email_2fa: false,
      require_phone_2fa: false,
    });
    const code = (await formOf(submitter.slug)).fields.find((f) => f.name === 'Code')!;
    expect(code.validation).toEqual({ pattern: '^x$', message: 'x only' });
    const refused = await run({ submitters: [{ role: 'Client', email: 'g@honoured.test', requireEmail2fa: true }] });
    expect(refused.body.errors?.[0]?.message).toBe(
      'require_email_2fa is not supported: the signing form has no one-time codes in `submitters[0]`.',
    );
  });
});
