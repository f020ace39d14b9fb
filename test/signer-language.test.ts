/**
 * Where a signer's language comes from (issue 24, "The signer's language";
 * src/i18n/signer-language.ts): Signet's `language` key on submitters and submissions through
 * REST (create, PUT /submitters/{id}, PUT /submissions/{id}) and GraphQL, returned in both; tags
 * normalised to codes, unknown ones refused naming the codes; DocuSeal's `metadata.lang`; the
 * account's default language (GraphQL and the CLI's `account settings`); and the order they are
 * taken in, Accept-Language last.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { LANGUAGE_CODES } from '../src/i18n/languages.ts';
import { signerLanguage } from '../src/i18n/signer-language.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

const SIGNER_LANGUAGE = /* GraphQL */ `
  query ($id: Int!) { submitter(id: $id) { language signerLanguage submission { language } } }
`;

/** The party's own `language`, the language it is written to in, and its submission's `language` (GraphQL). */
async function languagesOf(id: number): Promise<{ own: string | null; chosen: string; submission: string | null }> {
  const { body } = await graphql(t.url, SIGNER_LANGUAGE, { key: alice.apiKey, variables: { id } });
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  const s = body.data.submitter;
  return { own: s.language, chosen: s.signerLanguage, submission: s.submission.language };
}

/** A submission of one Client party (no request sent) with `submitter` and `submission` keys; its party. */
async function create(submitter: Record<string, unknown> = {}, submission: Record<string, unknown> = {}) {
  const { status, json } = await api('POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@example.test', ...submitter }],
    ...submission,
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0] as { id: number; submission_id: number; language: string | null };
}

async function setDefaultLanguage(code: string) {
  const { body } = await graphql(
    t.url,
    'mutation ($l: String) { updateAccountPreferences(input: {defaultLanguage: $l}) { defaultLanguage } }',
    { key: alice.apiKey, variables: { l: code } },
  );
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data.updateAccountPreferences.defaultLanguage as string | null;
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Acme', email: 'alice@language.test' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Agreement',
    documents: [{ name: 'agreement', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Full Name', role: 'Client', areas: [{ x: 72, y: 72, w: 150, h: 20, page: 1 }] }],
  });
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
});

describe('the `language` key over REST', () => {
  it('a submitter’s and a submission’s language are stored as codes and returned', async () => {
    const party = await create({ language: 'de-AT' }, { language: 'PT_br' });
    expect(party.language).toBe('de');
    const read = await api('GET', `/submitters/${party.id}`);
    expect(read.json.language).toBe('de');
    expect(openApiErrors('get', '/submitters/{id}', read.json)).toEqual([]);
    const submission = await api('GET', `/submissions/${party.submission_id}`);
    expect(submission.json.language).toBe('pt');
    expect(submission.json.submitters[0].language).toBe('de');
    expect(openApiErrors('get', '/submissions/{id}', submission.json)).toEqual([]);
    const list = await api('GET', `/submissions?template_id=${templateId}`);
    const item = list.json.data.find((s: { id: number }) => s.id === party.submission_id);
    expect(item).toMatchObject({ language: 'pt', submitters: [{ language: 'de' }] });
    // DocuSeal's embed documentation's `kr` is Korean.
    expect((await create({ language: 'kr' })).language).toBe('ko');
    expect((await create()).language).toBeNull();
  });

  it('PUT /submitters/{id} and PUT /submissions/{id} change it; "" removes it', async () => {
    const party = await create();
    const put = await api('PUT', `/submitters/${party.id}`, { language: 'ar' });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(put.json.language).toBe('ar');
    expect(openApiErrors('put', '/submitters/{id}', put.json)).toEqual([]);
    expect((await api('PUT', `/submitters/${party.id}`, { language: '' })).json.language).toBeNull();
    const submission = await api('PUT', `/submissions/${party.submission_id}`, { language: 'he' });
    expect(submission.status, JSON.stringify(submission.json)).toBe(200);
    expect(submission.json.language).toBe('he');
    expect(await languagesOf(party.id)).toEqual({ own: null, chosen: 'he', submission: 'he' });
    expect((await api('PUT', `/submissions/${party.submission_id}`, { language: '' })).json.language).toBeNull();
  });

  it('a tag of a language Signet does not speak is refused, naming the codes it does', async () => {
    const codes = LANGUAGE_CODES.join(', ');
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'x@example.test', language: 'xx' }],
    });
    expect(created.status).toBe(422);
    expect(created.json).toEqual({
      error: `language must be one of ${codes} (or a tag of one, such as pt-BR) in \`submitters[0].language\`.`,
    });
    const top = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      language: 'Klingon',
      submitters: [{ role: 'Client', email: 'x@example.test' }],
    });
    expect(top.status).toBe(422);
    expect(top.json.error).toContain(`language must be one of ${codes}`);
    const party = await create();
    const put = await api('PUT', `/submitters/${party.id}`, { language: 'zz-ZZ' });
    expect(put.status).toBe(422);
    expect(put.json.error).toContain(`language must be one of ${codes}`);
    expect((await api('PUT', `/submissions/${party.submission_id}`, { language: 'tlh' })).status).toBe(422);
    expect(await languagesOf(party.id)).toEqual({ own: null, chosen: 'en', submission: null });
  });
});

describe('the `language` key over GraphQL', () => {
  it('createSubmissions and updateSubmitter take it; Submitter and Submission return it', async () => {
    const { body } = await graphql(
      t.url,
      `mutation ($input: CreateSubmissionsInput!) {
         createSubmissions(input: $input) { submitters { id language signerLanguage } submissions { language } }
       }`,
      {
        key: alice.apiKey,
        variables: {
          input: {
            templateId,
            sendEmail: false,
            language: 'fr-CA',
            submitters: [{ role: 'Client', email: 'g@example.test', language: 'uk' }],
          },
        },
      },
    );
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    const created = body.data.createSubmissions;
    expect(created.submissions[0].language).toBe('fr');
    expect(created.submitters[0]).toMatchObject({ language: 'uk', signerLanguage: 'uk' });
    const update = await graphql(
      t.url,
      'mutation ($input: UpdateSubmitterInput!) { updateSubmitter(input: $input) { submitter { language } } }',
      { key: alice.apiKey, variables: { input: { id: created.submitters[0].id, language: 'xx' } } },
    );
    expect(update.body.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    expect(update.body.errors?.[0]?.message).toContain('language must be one of en, es,');
  });
});

describe('the order of the sources', () => {
  it('the party’s language, its submission’s, metadata.lang, the account’s default, then English', async () => {
    expect(await setDefaultLanguage('it')).toBe('it');
    try {
      const all = await create({ language: 'de', metadata: { lang: 'es' } }, { language: 'fr' });
      expect((await languagesOf(all.id)).chosen).toBe('de');
      const submission = await create({ metadata: { lang: 'es' } }, { language: 'fr' });
      expect((await languagesOf(submission.id)).chosen).toBe('fr');
      // DocuSeal's metadata.lang, read as DocuSeal writes it ("es", "pt-BR", "kr").
      const metadata = await create({ metadata: { lang: 'es' } });
      expect((await languagesOf(metadata.id)).chosen).toBe('es');
      const unknown = await create({ metadata: { lang: 'xx' } });
      expect((await languagesOf(unknown.id)).chosen).toBe('it');
      expect(await setDefaultLanguage('')).toBeNull();
      expect((await languagesOf(unknown.id)).chosen).toBe('en');
    } finally {
      await setDefaultLanguage('');
    }
  });

  it('Accept-Language (on a page) comes after the account’s default, by its q-values', () => {
    const none = { submitter: {}, submission: {}, account: { preferences: {} } };
    const browser = { acceptLanguage: 'sv-SE;q=0.4, ar;q=0.9, en;q=0.5' };
    expect(signerLanguage(none, browser)).toBe('ar');
    expect(signerLanguage({ ...none, account: { preferences: { default_language: 'ja' } } }, browser)).toBe('ja');
    expect(signerLanguage({ ...none, submitter: { metadata: { lang: 'nl' } } }, browser)).toBe('nl');
    expect(signerLanguage({ ...none, submission: { language: 'ko' } }, browser)).toBe('ko');
    expect(signerLanguage({ ...none, submitter: { language: 'pl' } }, { ...browser, requested: 'cs' })).toBe('cs');
    expect(signerLanguage(none, {})).toBe('en');
  });

  it('the account’s default language: set, read, refused when unknown, removed', async () => {
    const { body } = await graphql(
      t.url,
      'mutation { updateAccountPreferences(input: {defaultLanguage: "Deutsch"}) { defaultLanguage } }',
      { key: alice.apiKey },
    );
    expect(body.errors?.[0]?.message).toContain('language must be one of');
    expect(await setDefaultLanguage('nb-NO')).toBe('nb');
    const viewer = await graphql(t.url, '{ viewer { account { defaultLanguage } } }', { key: alice.apiKey });
    expect(viewer.body.data.viewer.account.defaultLanguage).toBe('nb');
    expect(await setDefaultLanguage('')).toBeNull();
  });
});
