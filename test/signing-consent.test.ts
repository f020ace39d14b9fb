/**
 * The signer's consent to sign electronically (issue 24 §4; docs/signing-form.md "Consent"),
 * through GraphQL with no API key as the page calls it: the disclosure in the signer's language
 * or the account's own (GraphQL updateAccountPreferences and the CLI), its version; the page's
 * signature saves and completion refused until it is accepted (nothing written); acceptSigningConsent
 * recording a `consent_accepted` event with IP, user agent, version, language and SHA-256, once;
 * a wrong version and a closed form refused; the acceptance's line in the audit log PDF
 * (pdftotext); the API's own completion not held to it.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { CATALOGS } from '../src/i18n/messages.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { strokePng } from './helpers/images.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { runSignet } from './helpers/processes.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;
let templateId: number;
const UA = 'ConsentTest/1.0 (vitest)';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-consent-'));

const FORM = 'slug state consent { text version acceptedAt acceptedVersion } fields { uuid name value }';

async function gql(query: string, variables: Record<string, unknown>) {
  const { status, body } = await graphql(t.url, query, { variables, headers: { 'user-agent': UA } });
  expect(status).toBe(200);
  return body as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
}
const load = (slug: string, language?: string) =>
  gql(
    `query ($slug: String!, $language: String) { signingForm(slug: $slug) { slug state
       consent(language: $language) { text version acceptedAt acceptedVersion } fields { uuid name value } } }`,
    { slug, language },
  );
const accept = (slug: string, version: string) =>
  gql(
    `mutation ($slug: String!, $version: String!) { acceptSigningConsent(slug: $slug, version: $version) { ${FORM} } }`,
    { slug, version },
  );
const save = (slug: string, values: unknown) =>
  gql(`mutation ($slug: String!, $values: JSON!) { saveSigningFormValues(slug: $slug, values: $values) { ${FORM} } }`, {
    slug,
    values,
  });
const complete = (slug: string, values?: unknown) =>
  gql(`mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { ${FORM} } }`, {
    slug,
    values,
  });

async function createSubmission(
  key: string,
  language?: string,
): Promise<{ id: number; slug: string; submission_id: number }> {
  const { status, json } = await rest(t.url, key, 'POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [{ role: 'Signer', email: 'sam@consent.test', name: 'Sam Signer', ...(language ? { language } : {}) }],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0];
}

async function uploadSignature(slug: string): Promise<string> {
  const form = new FormData();
  form.append('submitter_slug', slug);
  form.append('type', 'signature');
  form.append('file', new Blob([new Uint8Array(await strokePng(300, 100))], { type: 'image/png' }), 'signature.png');
  const response = await fetch(`${t.url}/api/attachments`, { method: 'POST', body: form });
  const json = (await response.json()) as { uuid: string };
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json.uuid;
}

const fieldUuid = (form: { fields: { uuid: string; name: string }[] }, name: string) =>
  form.fields.find((f) => f.name === name)!.uuid;

const sha12 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Acme Ltd', email: 'alice@consent.test' });
  bob = await t.createAccount({ name: 'Bob’s Shop', email: 'bob@consent.test' });
  const created = await rest(t.url, alice.apiKey, 'POST', '/templates/pdf', {
    name: 'Lease',
    documents: [{ name: 'lease', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
    fields: [
      { name: 'Full Name', role: 'Signer', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] },
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 120, w: 200, h: 40, page: 1 }] },
    ],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  templateId = created.json.id;
}, 60_000);

afterAll(async () => {
  await t?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the disclosure', () => {
  it("is Signet's text in the signer's language (or the one asked), with the account's name; a version", async () => {
    const party = await createSubmission(alice.apiKey);
    const english = (await load(party.slug)).data.signingForm.consent;
    const expected = String(CATALOGS.en.consent.text).replace(/\{\{account\}\}/g, 'Acme Ltd');
    expect(english).toEqual({
      text: expected,
      version: `default-en-${sha12(expected)}`,
      acceptedAt: null,
      acceptedVersion: null,
    });
    expect(english.text.split('\n\n')).toHaveLength(5);
    expect(english.text).toContain('paper copy');

    const german = (await load(party.slug, 'de-AT')).data.signingForm.consent;
    expect(german.text).toBe(String(CATALOGS.de.consent.text).replace(/\{\{account\}\}/g, 'Acme Ltd'));
    expect(german.version).toMatch(/^default-de-[0-9a-f]{12}$/);
    // A tag Signet does not speak is passed over: the signer's own language.
    expect((await load(party.slug, 'xx')).data.signingForm.consent.version).toBe(english.version);
    // The submitter's stored language, without a language asked for.
    const french = await createSubmission(alice.apiKey, 'fr');
    expect((await load(french.slug)).data.signingForm.consent.version).toMatch(/^default-fr-/);
  });
});

describe('before the signer accepts', () => {
  it('refuses a signature save and completion (422, nothing written); other values save', async () => {
    const party = await createSubmission(alice.apiKey);
    const form = (await load(party.slug)).data.signingForm;
    const signature = await uploadSignature(party.slug);

    const refusedSave = await save(party.slug, { [fieldUuid(form, 'Signature')]: signature });
    expect(refusedSave.errors?.[0]?.message).toMatch(/^Please agree to sign electronically first/);
    expect(refusedSave.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    const refusedComplete = await complete(party.slug, { [fieldUuid(form, 'Full Name')]: 'Sam Signer' });
    expect(refusedComplete.errors?.[0]?.message).toMatch(/^Please agree to sign electronically first/);

    const row = await t.db.submitter.findUniqueOrThrow({ where: { id: party.id } });
    expect([row.values, row.completedAt, row.startedAt]).toEqual([{}, null, null]);
    expect(await t.db.submissionEvent.count({ where: { submitterId: party.id } })).toBe(0);

    // A text value is no signature: saved as before. Clearing a signature needs no consent either.
    const saved = await save(party.slug, {
      [fieldUuid(form, 'Full Name')]: 'Sam',
      [fieldUuid(form, 'Signature')]: null,
    });
    expect(saved.errors).toBeUndefined();

    // The sender's API is not held to the signer's consent.
    const api = await rest(t.url, alice.apiKey, 'PUT', `/submitters/${party.id}`, {
      completed: true,
      values: { 'Full Name': 'Sam Signer', Signature: 'Sam Signer' },
    });
    expect(api.status, JSON.stringify(api.json)).toBe(200);
    expect(api.json.status).toBe('completed');
  });

  it('refuses a version that is not the current text', async () => {
    const party = await createSubmission(alice.apiKey);
    const { version } = (await load(party.slug)).data.signingForm.consent;
    for (const wrong of ['default-en-000000000000', 'v1', `${version}x`, 'account-en-' + version.slice(-12)]) {
      const refused = await accept(party.slug, wrong);
      expect(refused.errors?.[0]?.message, wrong).toMatch(/^Disclosure version ".*" is not the current one/);
      expect(refused.errors?.[0]?.extensions?.code).toBe('VALIDATION');
    }
    expect(await t.db.submissionEvent.count({ where: { submitterId: party.id } })).toBe(0);
  });
});

describe('acceptSigningConsent', () => {
  it('records consent_accepted once (IP, UA, version, language, SHA-256); the audit log prints it', async () => {
    const party = await createSubmission(alice.apiKey);
    const form = (await load(party.slug, 'de')).data.signingForm;
    const accepted = await accept(party.slug, form.consent.version);
    expect(accepted.errors).toBeUndefined();
    expect(accepted.data.acceptSigningConsent.consent.acceptedVersion).toBe(form.consent.version);
    const acceptedAt = accepted.data.acceptSigningConsent.consent.acceptedAt;
    expect(Date.parse(acceptedAt)).toBeGreaterThan(Date.now() - 60_000);

    // Twice: nothing more recorded, the same time.
    const again = await accept(party.slug, form.consent.version);
    expect(again.data.acceptSigningConsent.consent.acceptedAt).toBe(acceptedAt);
    const events = await t.db.submissionEvent.findMany({ where: { submitterId: party.id } });
    expect(events.map((e) => [e.eventType, e.data])).toEqual([
      [
        'consent_accepted',
        {
          ip: '127.0.0.1',
          ua: UA,
          version: form.consent.version,
          language: 'de',
          sha256: createHash('sha256').update(form.consent.text, 'utf8').digest('hex'),
        },
      ],
    ]);

    const signature = await uploadSignature(party.slug);
    expect((await save(party.slug, { [fieldUuid(form, 'Signature')]: signature })).errors).toBeUndefined();
    const done = await complete(party.slug, { [fieldUuid(form, 'Full Name')]: 'Sam Signer' });
    expect(done.errors).toBeUndefined();
    expect(done.data.completeSigningForm.state).toBe('COMPLETED');

    // A closed form: DocuSeal's refusal.
    const closed = await accept(party.slug, form.consent.version);
    expect(closed.errors?.[0]?.message).toBe('Form has been completed already.');

    // GraphQL's events and the audit log (in English: the signer's stored language).
    const { body } = await graphql(t.url, 'query ($id: Int!) { submission(id: $id) { events { eventType data } } }', {
      key: alice.apiKey,
      variables: { id: party.submission_id },
    });
    expect(body.data.submission.events.map((e: { eventType: string }) => e.eventType)).toContain('consent_accepted');
    // DocuSeal's submission_events leave Signet's type out (an enum in its OpenAPI document).
    const rested = (await rest(t.url, alice.apiKey, 'GET', `/submitters/${party.id}`)).json;
    expect(rested.submission_events.map((e: { event_type: string }) => e.event_type)).toEqual([
      'start_form',
      'complete_form',
    ]);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const submission = (await rest(t.url, alice.apiKey, 'GET', `/submissions/${party.submission_id}`)).json;
    const file = path.join(tmp, 'audit.pdf');
    fs.writeFileSync(file, Buffer.from(await (await fetch(submission.audit_log_url)).arrayBuffer()));
    const text = execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
    expect(text).toMatch(
      new RegExp(
        `\\d\\d:\\d\\d:\\d\\dZ Agreed to sign electronically: ` +
          `disclosure ${form.consent.version} \\(consent_accepted\\) ` +
          `IP 127\\.0\\.0\\.1 · User agent ConsentTest/1\\.0 \\(vitest\\)`,
      ),
    );
  }, 90_000);

  it("writes the audit log's line in the audit log's language", async () => {
    const party = await createSubmission(alice.apiKey, 'de');
    const version = await acceptConsentViaApi(t.url, party.slug, { 'user-agent': UA });
    const form = (await load(party.slug)).data.signingForm;
    await complete(party.slug, {
      [fieldUuid(form, 'Full Name')]: 'Sam Signer',
      [fieldUuid(form, 'Signature')]: await uploadSignature(party.slug),
    });
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const submission = (await rest(t.url, alice.apiKey, 'GET', `/submissions/${party.submission_id}`)).json;
    const file = path.join(tmp, 'audit-de.pdf');
    fs.writeFileSync(file, Buffer.from(await (await fetch(submission.audit_log_url)).arrayBuffer()));
    const text = execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
    expect(version).toMatch(/^default-de-/);
    expect(text).toContain(`Elektronischer Unterschrift zugestimmt: Erklärung ${version} (consent_accepted)`);
  }, 90_000);
});

describe("an account's own text", () => {
  const setText = (key: string, value: unknown) =>
    graphql(
      t.url,
      'mutation ($text: JSON) { updateAccountPreferences(input: {signingConsentText: $text}) { signingConsentText } }',
      { key, variables: { text: value } },
    );

  it('is shown instead of Signet’s, per language with a default, and versioned by its text', async () => {
    const own = { de: 'Bobs eigene Erklärung.\n\nZweiter Absatz.', default: 'Bob’s own disclosure.' };
    const set = await setText(bob.apiKey, { ...own, 'pt-BR': 'Divulgação do Bob.' });
    expect(set.body.errors).toBeUndefined();
    expect(set.body.data.updateAccountPreferences.signingConsentText).toEqual({ ...own, pt: 'Divulgação do Bob.' });

    const party = (
      await rest(t.url, bob.apiKey, 'POST', '/submissions', {
        template_id: (
          await rest(t.url, bob.apiKey, 'POST', '/templates/pdf', {
            name: 'Bob’s form',
            documents: [{ name: 'f', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
            fields: [
              { name: 'Sig', type: 'signature', role: 'Signer', areas: [{ x: 60, y: 60, w: 200, h: 40, page: 1 }] },
            ],
          })
        ).json.id,
        send_email: false,
        submitters: [{ role: 'Signer', email: 'sue@bob.test' }],
      })
    ).json[0];
    const english = (await load(party.slug)).data.signingForm.consent;
    expect([english.text, english.version]).toEqual([own.default, `account-en-${sha12(own.default)}`]);
    const german = (await load(party.slug, 'de')).data.signingForm.consent;
    expect([german.text, german.version]).toEqual([own.de, `account-de-${sha12(own.de)}`]);
    expect((await accept(party.slug, german.version)).errors).toBeUndefined();

    // A new text: the old version is refused, the acceptance stands.
    await setText(bob.apiKey, 'Bob’s new disclosure.');
    const stale = await accept(party.slug, english.version);
    expect(stale.errors?.[0]?.message).toMatch(/is not the current one/);
    const now = (await load(party.slug)).data.signingForm.consent;
    expect(now.text).toBe('Bob’s new disclosure.');
    expect(now.acceptedVersion).toBe(german.version);

    // "" removes it: Signet's text again.
    await setText(bob.apiKey, '');
    expect((await load(party.slug)).data.signingForm.consent.version).toMatch(/^default-en-/);
  });

  it('refuses a key that is no language, an empty text, a text over 20,000 characters (422)', async () => {
    for (const [value, message] of [
      [{ xx: 'text' }, 'signing_consent_text: "xx" is not a language'],
      [{ de: '  ' }, 'signing_consent_text: the de text is empty'],
      ['a'.repeat(20_001), 'too long (maximum is 20000 characters)'],
      [42, ''],
    ] as const) {
      const refused = await setText(alice.apiKey, value);
      expect(refused.body.errors?.[0]?.extensions?.code, JSON.stringify(value).slice(0, 40)).toBe('VALIDATION');
      expect(refused.body.errors?.[0]?.message).toContain(message);
    }
  });

  it('is set by `signet account settings --consent-text` (text or JSON per language)', async () => {
    const env = { DATABASE_URL: t.database.url };
    const plain = await runSignet(
      ['account', 'settings', '--account-id', String(alice.accountId), '--consent-text', 'Acme’s text.'],
      env,
    );
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout).consentText).toEqual({ default: 'Acme’s text.' });
    const json = await runSignet(
      ['account', 'settings', '--account-id', String(alice.accountId), '--consent-text', '{"fr":"Texte d’Acme."}'],
      env,
    );
    expect(JSON.parse(json.stdout).consentText).toEqual({ fr: 'Texte d’Acme.' });
    const bad = await runSignet(
      ['account', 'settings', '--account-id', String(alice.accountId), '--consent-text', '{"zz":"x"}'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"zz" is not a language');
    const removed = await runSignet(
      ['account', 'settings', '--account-id', String(alice.accountId), '--consent-text', ''],
      env,
    );
    expect(JSON.parse(removed.stdout).consentText).toBeNull();
  }, 60_000);
});
