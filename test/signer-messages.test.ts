/**
 * What a signer is sent and given, in the signer's language (issue 24, "The signer's language"):
 * the invitation email and SMS, the completed copy, the audit log's fixed texts and times, and
 * the dates drawn into the signed PDF — for a German and an Arabic signer, through a real SMTP
 * server, the SMS outbox and the completion pipeline (pdftotext of the signed files). Arabic
 * emails are right to left (`dir="rtl"`); text extracted from an Arabic PDF comes as presentation
 * forms and is compared after NFKC normalisation.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from './helpers/smtp.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let alice: CreatedAccount;
let templateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-signer-messages-'));

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
const mailsTo = (address: string): ReceivedMail[] => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));

/** The text of a PDF at `url` (pdftotext), direction marks removed and Arabic presentation forms folded (NFKC). */
async function pdfText(url: string, name: string): Promise<string> {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return execFileSync('pdftotext', [file, '-'])
    .toString()
    .normalize('NFKC')
    .replace(/[\u202a-\u202e\u200e\u200f]/g, '')
    .replace(/\s+/g, ' ');
}

/** One Client party of a new submission in `language`, sent by email (and SMS when it has a phone). */
async function invite(language: string, email: string, extra: Record<string, unknown> = {}) {
  const { status, json } = await api('POST', '/submissions', {
    template_id: templateId,
    name: 'Vertrag',
    submitters: [{ role: 'Client', email, name: 'Client', language, ...extra }],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0] as { id: number; submission_id: number; slug: string };
}

/** Completes a party through the API with both dates, and waits for its documents, audit log and emails. */
async function complete(id: number) {
  const { status, json } = await api('PUT', `/submitters/${id}`, {
    completed: true,
    values: { Name: 'Jürgen Schmidt', Date: '2026-11-28', 'Long date': '2026-11-28' },
  });
  expect(status, JSON.stringify(json)).toBe(200);
  await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@example.test>' } });
  alice = await t.createAccount({ name: 'Acme', email: 'alice@messages.test' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Contract',
    documents: [{ name: 'contract', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 20, page: 1 }] },
      { name: 'Date', type: 'date', role: 'Client', areas: [{ x: 72, y: 110, w: 200, h: 20, page: 1 }] },
      {
        name: 'Long date',
        type: 'date',
        role: 'Client',
        preferences: { format: 'D MMMM YYYY' },
        areas: [{ x: 72, y: 150, w: 200, h: 20, page: 1 }],
      },
    ],
  });
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  if (!process.env.KEEP_TEST_FILES) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('a German signer', () => {
  it('gets the invitation, the completed copy, the audit log and the dates in German', async () => {
    const party = await invite('de', 'jurgen@messages.test');
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const [invitation] = mailsTo('jurgen@messages.test');
    expect(invitation!.parsed.subject).toBe('Sie wurden eingeladen, ein Formular auszufüllen');
    expect(invitation!.parsed.text).toContain('Guten Tag,');
    expect(invitation!.parsed.text).toContain('Sie wurden eingeladen, das Formular „Vertrag“ auszufüllen.');
    expect(invitation!.parsed.text).toContain(`Prüfen und absenden: ${t.url}/s/${party.slug}?t=`);
    expect(invitation!.parsed.text).toContain('Vielen Dank,\nAcme');
    expect(invitation!.parsed.html).toContain('<html lang="de" dir="ltr">');

    await complete(party.id);
    const copy = mailsTo('jurgen@messages.test').find((m) => m.parsed.subject === 'Ihre Kopie des Dokuments');
    expect(
      copy,
      mailsTo('jurgen@messages.test')
        .map((m) => m.parsed.subject)
        .join(' | '),
    ).toBeDefined();
    expect(copy!.parsed.text).toContain('Ihre Kopie von „Vertrag“ finden Sie im Anhang dieser E-Mail.');
    expect(copy!.parsed.text).toContain('Sie können Ihre Kopie auch hier ansehen und herunterladen: Vertrag:');
    expect(copy!.parsed.html).toContain('dir="ltr"');
    // The sender's completed email: the account has no default language, so English.
    expect(mailsTo('alice@messages.test').map((m) => m.parsed.subject)).toContain(
      'Contract has been completed by Client',
    );

    const submission = (await api('GET', `/submissions/${party.submission_id}`)).json;
    const log = await pdfText(submission.audit_log_url, 'de-audit.pdf');
    for (const text of ['Prüfprotokoll', 'Vorgangs-ID', 'Beteiligte', 'Ereignisse', 'E-Mail', 'Abgeschlossen am'])
      expect(log).toContain(text);
    expect(log).toContain('Vorgang über die API abgeschlossen (api_complete_form)');
    expect(log).toMatch(/E-Mail an jurgen@messages\.test (kept|aufbewahrt|über SMTP gesendet)/);
    // Times: ISO 8601 UTC, then as German writes them ("28. November 2026 um 10:15:30 UTC").
    const month = '(Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember)';
    expect(log).toMatch(new RegExp(`\\d{4}-[\\d-]{5}T[\\d:]{8}Z \\(\\d{1,2}\\. ${month} \\d{4} um [\\d:]{8} UTC\\)`));
    // The values as the document shows them: the language's date, the field's own format.
    expect(log).toContain('DATE 28.11.2026');
    expect(log).toContain('LONG DATE 28 November 2026');
    const document = await pdfText(submission.documents[0].url, 'de-document.pdf');
    expect(document).toContain('28.11.2026');
    expect(document).toContain('28 November 2026');
  });
});

describe('an Arabic signer', () => {
  it('gets a right-to-left invitation email, an Arabic SMS, copy, audit log and dates', async () => {
    const party = await invite('ar', 'sara@messages.test', { phone: '+15550001111', send_sms: true });
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const [invitation] = mailsTo('sara@messages.test');
    expect(invitation!.parsed.subject).toBe('أنت مدعو لتعبئة نموذج');
    expect(invitation!.parsed.text).toContain('تمت دعوتك لتعبئة النموذج "Vertrag".');
    expect(invitation!.parsed.text).toContain(`المراجعة والإرسال: ${t.url}/s/${party.slug}?t=`);
    expect(invitation!.parsed.html).toContain('<html lang="ar" dir="rtl">');
    expect(invitation!.parsed.html).toContain('<body dir="rtl">');
    const sms = await t.db.smsMessage.findMany({ where: { submitterId: party.id } });
    expect(sms.map((m) => m.body)).toEqual([`دعاك Acme لتوقيع مستند: ${t.url}/s/${party.slug}`]);

    await complete(party.id);
    const copy = mailsTo('sara@messages.test').find((m) => m.parsed.subject === 'نسختك من المستند');
    expect(
      copy,
      mailsTo('sara@messages.test')
        .map((m) => m.parsed.subject)
        .join(' | '),
    ).toBeDefined();
    expect(copy!.parsed.text).toContain('ستجد نسختك من "Vertrag" في مرفقات هذه الرسالة.');
    expect(copy!.parsed.html).toContain('<html lang="ar" dir="rtl">');

    // pdftotext puts mixed-direction lines back in logical order with its own spacing around
    // brackets and digits: compared without spaces and brackets.
    const squash = (text: string) => text.replace(/[\s()]/g, '');
    const submission = (await api('GET', `/submissions/${party.submission_id}`)).json;
    const log = squash(await pdfText(submission.audit_log_url, 'ar-audit.pdf'));
    for (const text of ['سجل التدقيق', 'رقم الطلب', 'الأطراف', 'الأحداث', 'البريد الإلكتروني', 'تاريخ الإكمال'])
      expect(log).toContain(squash(text));
    expect(log).toContain(squash('اكتمل الطلب عبر واجهة API (api_complete_form)'));
    expect(log).toContain(squash('حُفظت ولم تُرسل، لم يُضبط مزود رسائل نصية'));
    // Times as Arabic writes them, with Latin digits ("28 نوفمبر 2026 في 9:49:40 ص UTC"), then ISO 8601.
    expect(log).toMatch(/\d{1,2}(يناير|فبراير|مارس|أبريل|مايو|يونيو|يوليو|أغسطس|سبتمبر|أكتوبر|نوفمبر|ديسمبر)\d{4}في/);
    expect(log).toContain('DATE28/11/2026');
    expect(log).toContain(squash('LONG DATE 28 نوفمبر 2026'));
    const document = squash(await pdfText(submission.documents[0].url, 'ar-document.pdf'));
    expect(document).toContain('28/11/2026');
    // Drawn right to left ("2026 نوفمبر 28" from the left: src/i18n/bidi.ts); pdftotext gives such a
    // short line alone either in reading order or as drawn.
    expect(document).toMatch(/28نوفمبر2026|2026نوفمبر28/);
  });
});

describe('a custom message given through the API', () => {
  it('stays as given; only what Signet adds is in the signer’s language', async () => {
    const { status } = await api('POST', '/submissions', {
      template_id: templateId,
      message: { subject: 'Please fill in {{template.name}}', body: 'Dear client: {{submitter.link}}' },
      submitters: [{ role: 'Client', email: 'custom@messages.test', language: 'ar' }],
    });
    expect(status).toBe(200);
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const [mail] = mailsTo('custom@messages.test');
    expect(mail!.parsed.subject).toBe('Please fill in Contract');
    expect(mail!.parsed.text).toMatch(/^Dear client: http/);
    // Its direction is its own (first strong character), not the signer's language's.
    expect(mail!.parsed.html).toContain('<html dir="ltr">');
  });
});

describe('the declined notice', () => {
  const DECLINE = /* GraphQL */ `
    mutation ($slug: String!, $reason: String!) { declineSigningForm(slug: $slug, reason: $reason) { slug } }
  `;

  it('tells the sender, in the account’s default language, with the signer’s reason as plain text', async () => {
    const { body } = await graphql(
      t.url,
      'mutation { updateAccountPreferences(input: {defaultLanguage: "fr"}) { defaultLanguage } }',
      { key: alice.apiKey },
    );
    expect(body.data.updateAccountPreferences.defaultLanguage).toBe('fr');
    try {
      const party = await invite('de', 'decliner@messages.test', { name: 'Dora Decliner' });
      const declined = await graphql(t.url, DECLINE, {
        variables: { slug: party.slug, reason: 'Wrong <b>amount</b>, {{submitter.link}}' },
      });
      expect(declined.body.errors, JSON.stringify(declined.body.errors)).toBeUndefined();
      await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
      const notice = mailsTo('alice@messages.test').find((m) => m.parsed.subject?.includes('a refusé'));
      expect(notice?.parsed.subject).toBe('Dora Decliner a refusé « Vertrag »');
      expect(notice!.parsed.text).toBe(
        'Bonjour,\n\nDora Decliner a refusé « Vertrag ».\n\n' +
          'Motif : Wrong <b>amount</b>, {{submitter.link}}\n\nMerci,\nAcme',
      );
      expect(notice!.parsed.html).toContain('<p>Motif : Wrong &lt;b&gt;amount&lt;/b&gt;, {{submitter.link}}</p>');
      expect(notice!.parsed.html).toContain('<html lang="fr" dir="ltr">');
      expect(notice!.parsed.replyTo?.text).toBe('decliner@messages.test');
    } finally {
      await graphql(t.url, 'mutation { updateAccountPreferences(input: {defaultLanguage: ""}) { defaultLanguage } }', {
        key: alice.apiKey,
      });
    }
  });

  it('is not sent when the request asked for no emails', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'quiet@messages.test', name: 'Quiet Party' }],
    });
    await graphql(t.url, DECLINE, { variables: { slug: json[0].slug, reason: 'No' } });
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(mailsTo('alice@messages.test').filter((m) => m.parsed.subject?.includes('Quiet Party'))).toEqual([]);
  });
});
