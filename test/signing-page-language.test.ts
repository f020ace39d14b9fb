/**
 * The signing page's language on the wire (issue 24 §2; src/signing-form/page-routes.ts): the shell
 * of /s/{slug} and /d/{slug} and the 404 page are written in the language signerLanguage chooses —
 * `?lang=` (the embed's data-language) first, then the submitter's `language`, the submission's, the
 * account's default, Accept-Language — with `<html lang dir>` and the page's messages (that
 * language's and English's `form` and `consent` namespaces) in a JSON script no text can close.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Languages Inc', email: 'alice@languages.test' });
  const created = await rest(t.url, alice.apiKey, 'POST', '/templates/pdf', {
    name: 'Lease',
    documents: [{ name: 'lease', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Signature', type: 'signature', role: 'Tenant', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
    ],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  templateId = created.json.id;
}, 60_000);

afterAll(async () => {
  await t?.close();
});

async function createSubmitter(extra: Record<string, unknown>, submitter: Record<string, unknown> = {}) {
  const created = await rest(t.url, alice.apiKey, 'POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [{ role: 'Tenant', email: 'tenant@languages.test', ...submitter }],
    ...extra,
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return created.json[0].slug as string;
}

async function page(path: string, acceptLanguage?: string) {
  const response = await fetch(new URL(path, t.url), {
    headers: acceptLanguage ? { 'accept-language': acceptLanguage } : {},
  });
  const html = await response.text();
  const json = /<script type="application\/json" id="signet-messages">(.*?)<\/script>/s.exec(html)?.[1];
  const html_ = /<html lang="([^"]+)" dir="([^"]+)">/.exec(html);
  return {
    status: response.status,
    html,
    lang: html_?.[1],
    dir: html_?.[2],
    messages: json
      ? (JSON.parse(json) as { language: string; dir: string; resources: Record<string, unknown> })
      : undefined,
  };
}

describe('the signing page in the signer language', () => {
  it('follows Accept-Language when nothing is stored, right to left for Arabic', async () => {
    const slug = await createSubmitter({});
    const arabic = await page(`/s/${slug}`, 'ar-EG,ar;q=0.9,en;q=0.5');
    expect(arabic.status).toBe(200);
    expect([arabic.lang, arabic.dir]).toEqual(['ar', 'rtl']);
    expect(arabic.html).toContain('<title>توقيع المستندات</title>');
    expect(arabic.messages?.language).toBe('ar');
    expect(Object.keys(arabic.messages?.resources ?? {}).sort()).toEqual(['ar', 'en']);
    const english = await page(`/s/${slug}`);
    expect([english.lang, english.dir]).toEqual(['en', 'ltr']);
    expect(Object.keys(english.messages?.resources ?? {})).toEqual(['en']);
  });

  it('takes the submitter language over the submission and the browser, and ?lang= over all', async () => {
    const slug = await createSubmitter({ language: 'fr' }, { language: 'de' });
    expect((await page(`/s/${slug}`, 'es')).lang).toBe('de');
    const asked = await page(`/s/${slug}?lang=he`, 'es');
    expect([asked.lang, asked.dir]).toEqual(['he', 'rtl']);
    // DocuSeal's tag spellings are taken too; an unknown one is passed over.
    expect((await page(`/s/${slug}?lang=pt-BR`)).lang).toBe('pt');
    expect((await page(`/s/${slug}?lang=xx`)).lang).toBe('de');
    const submissionOnly = await createSubmitter({ language: 'fr' });
    expect((await page(`/s/${submissionOnly}`, 'es')).lang).toBe('fr');
  });

  it('writes the 404 page in the browser language', async () => {
    const missing = await page('/s/nonexistentslug123', 'ja');
    expect(missing.status).toBe(404);
    expect(missing.lang).toBe('ja');
    expect(missing.html).toContain('フォームが見つかりません');
  });

  it('keeps every message inside its script element', async () => {
    const slug = await createSubmitter({});
    const { html, messages } = await page(`/s/${slug}`);
    // One script end per script: the messages' JSON has no "</" of its own.
    const scripts = html.match(/<script/g)?.length ?? 0;
    expect(html.match(/<\/script>/g)?.length).toBe(scripts);
    expect(messages?.resources.en).toMatchObject({ form: { shell: { title: 'Sign documents' } } });
  });
});
