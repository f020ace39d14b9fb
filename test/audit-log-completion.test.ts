/**
 * The audit log as the completion makes it (issue 13, "The audit log tells the truth, and all of
 * it"), through the REST API of a running service with its jobs:
 * - what happened to each email: sent through a real SMTP server (in process), a failed attempt
 *   and its retry, or only kept in the outbox when no provider is configured — the same facts in
 *   the submission events (GraphQL `data`, REST `submission_events`) and in the audit log's lines;
 * - every party's values under their field names, with the signature and initials drawn as images
 *   (pdfimages -list), a long value readable over pages, and the log still validly signed (pdfsig).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { strokePng } from './helpers/images.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { pdfsigValidPades } from './helpers/pades-verifier.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-audit-completion-'));
let smtp: TestSmtpServer;
let withSmtp: TestApp;
let withoutProvider: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;

// About 8 KB: under the 10,000-character limit of a value (docs/security.md), over two pages of the log.
const LONG_WORDS = Array.from({ length: 900 }, (_, i) => `clause${i}`);
const LONG_VALUE = `${LONG_WORDS.slice(0, 450).join(' ')}\n${LONG_WORDS.slice(450).join(' ')}`;

/** The template of these tests: a client with text, long text, signature and initials; a manager with a name. */
async function createTemplate(t: TestApp, key: string): Promise<number> {
  const { status, json } = await rest(t.url, key, 'POST', '/templates/pdf', {
    name: 'Engagement letter',
    documents: [{ name: 'letter', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
    fields: [
      { name: 'Client Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] },
      { name: 'Statement', role: 'Client', areas: [{ x: 60, y: 200, w: 400, h: 200, page: 1 }] },
      {
        name: 'Client Signature',
        type: 'signature',
        role: 'Client',
        areas: [{ x: 60, y: 120, w: 200, h: 40, page: 1 }],
      },
      { name: 'Client Initials', type: 'initials', role: 'Client', areas: [{ x: 300, y: 120, w: 60, h: 30, page: 1 }] },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 2 }] },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json.id;
}

async function download(url: string, name: string): Promise<string> {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return file;
}

const textOf = (file: string) => execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');

/** pdfimages -list: the image rows (not soft masks) as "WxH". */
const imagesOf = (file: string) =>
  execFileSync('pdfimages', ['-list', file])
    .toString()
    .trim()
    .split('\n')
    .slice(2)
    .map((line) => line.trim().split(/\s+/))
    .filter((cells) => cells[2] === 'image')
    .map((cells) => `${cells[3]}x${cells[4]}`);

const pdfsig = (file: string) => {
  try {
    return execFileSync('pdfsig', [file]).toString();
  } catch (error) {
    return String((error as { stdout?: Buffer }).stdout ?? error);
  }
};

/** GraphQL's events of a submission: type and data, oldest first. */
async function eventsOf(
  t: TestApp,
  key: string,
  submissionId: number,
  submitterId: number,
): Promise<{ eventType: string; data: Record<string, unknown> }[]> {
  const { body } = await graphql(
    t.url,
    'query($id: Int!) { submission(id: $id) { events { eventType submitterId data } } }',
    { key, variables: { id: submissionId } },
  );
  expect(body.errors).toBeUndefined();
  return body.data.submission.events
    .filter((e: { submitterId: number }) => e.submitterId === submitterId)
    .map(({ eventType, data }: { eventType: string; data: Record<string, unknown> }) => ({ eventType, data }));
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  [withSmtp, withoutProvider] = await Promise.all([
    // Retries a second after a failure: time for a test to act between an attempt and its retry.
    startTestApp({
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@example.test>', SEND_RETRY_BASE_MS: '1000' },
    }),
    startTestApp(),
  ]);
  alice = await withSmtp.createAccount({ name: 'Acme Λtd', email: 'alice@audit.test' });
  bob = await withoutProvider.createAccount({ name: 'Bob’s Shop', email: 'bob@audit.test' });
});
afterAll(async () => {
  await withSmtp?.close();
  await withoutProvider?.close();
  await smtp?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the audit log of a completed submission', () => {
  it(
    'lists each party’s values with the signature and initials as images, and a failed email, ' +
      'its retry and its send as they happened',
    async () => {
      const t = withSmtp;
      const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
      const templateId = await createTemplate(t, alice.apiKey);
      const signature = await strokePng(300, 100);
      const initials = await strokePng(120, 60);
      // The manager's signature request: refused once (451), then accepted on the retry.
      smtp.rejectNext(451, 'Greylisted, try again later');
      const created = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [
          {
            role: 'Client',
            email: 'client@audit.test',
            name: 'Ελένη Παπαδοπούλου',
            completed: true,
            values: {
              'Client Name': 'Ελένη Παπαδοπούλου',
              Statement: LONG_VALUE,
              'Client Signature': `data:image/png;base64,${base64(signature)}`,
              'Client Initials': `data:image/png;base64,${base64(initials)}`,
            },
          },
          { role: 'Manager', email: 'manager@audit.test', name: 'Анна Иванова' },
        ],
      });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      const [client, manager] = created.json;
      await t.jobs.waitForIdle({ timeoutMs: 30_000, withinMs: 10_000 });
      expect(smtp.messages.filter((m) => m.envelope.rcptTo.includes('manager@audit.test'))).toHaveLength(1);

      // The submission events say what happened, the latest last: failed and retried, then sent on attempt 2.
      const managerEvents = await eventsOf(t, alice.apiKey, client.submission_id, manager.id);
      expect(managerEvents).toEqual([
        {
          eventType: 'fail_email',
          data: expect.objectContaining({
            provider: 'smtp',
            attempt: 1,
            max_attempts: 10,
            retrying: true,
            to: 'manager@audit.test',
            error: expect.stringContaining('451'),
          }),
        },
        {
          eventType: 'send_email',
          data: expect.objectContaining({ provider: 'smtp', attempt: 2, to: 'manager@audit.test' }),
        },
      ]);
      const rested = (await api('GET', `/submitters/${manager.id}`)).json;
      expect(rested.submission_events.map((e: { event_type: string }) => e.event_type)).toEqual([
        'fail_email',
        'send_email',
      ]);

      await api('PUT', `/submitters/${manager.id}`, { completed: true, values: { 'Manager Name': 'Анна Иванова' } });
      await t.jobs.waitForIdle({ timeoutMs: 30_000 });
      const done = (await api('GET', `/submissions/${client.submission_id}`)).json;
      expect(done.status).toBe('completed');
      const log = await download(done.audit_log_url, 'audit-smtp.pdf');
      const text = textOf(log);

      expect(text).toMatch(
        new RegExp(
          /Email to manager@audit\.test via SMTP failed \(attempt 1 of 10\): [^()]*/.source +
            /451 Greylisted, try again later; will be retried \(fail_email\)/.source,
        ),
      );
      expect(text).toMatch(/Z Email sent to manager@audit\.test via SMTP on attempt 2 \(send_email\)/);
      expect(text).not.toContain('Email sent (send_email)');
      // Values under their field names (DocuSeal's layout); the long statement whole, over pages.
      expect(text).toContain('Values CLIENT NAME Ελένη Παπαδοπούλου STATEMENT clause0 clause1');
      expect(text).toContain('CLIENT SIGNATURE');
      expect(text).toContain('CLIENT INITIALS');
      expect(text).toContain('Values MANAGER NAME Анна Иванова');
      const positions = LONG_WORDS.map((word) => text.indexOf(` ${word} `));
      expect(positions.every((p) => p > 0)).toBe(true);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
      expect(Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [log]).toString())![1])).toBeGreaterThanOrEqual(2);
      // The signature and the initials as the images the client gave, each once.
      expect(imagesOf(log).sort()).toEqual(['120x60', '300x100']);
      const signed = pdfsig(log);
      expect(signed).toContain('Signature is Valid');
      // PAdES B-LT (issue 17): covering the whole revision it signed (the DSS follows it).
      expect(pdfsigValidPades(fs.readFileSync(log))).toBe(true);
    },
  );

  it(
    'prints a failed email as to be retried when the log is made; the events then say it was given up, ' +
      'the party having completed',
    async () => {
      const t = withSmtp;
      const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);
      const templateId = await createTemplate(t, alice.apiKey);
      smtp.rejectNext(421, 'Service not available, closing channel');
      const created = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [
          {
            role: 'Client',
            email: 'late@audit.test',
            values: { 'Client Name': 'Late Client', 'Client Signature': 'Late' },
          },
          {
            role: 'Manager',
            email: 'late-manager@audit.test',
            completed: true,
            values: { 'Manager Name': 'Late Manager' },
          },
        ],
      });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      const [client] = created.json;
      // The request to the client failed once; before its retry, the client completes (e.g. through an embedded form).
      for (
        let waited = 0;
        !(await eventsOf(t, alice.apiKey, client.submission_id, client.id)).some((e) => e.eventType === 'fail_email');
        waited += 20
      ) {
        expect(waited).toBeLessThan(10_000);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await api('PUT', `/submitters/${client.id}`, { completed: true });
      await t.jobs.waitForIdle({ timeoutMs: 30_000, withinMs: 10_000 });

      const done = (await api('GET', `/submissions/${client.submission_id}`)).json;
      expect(done.status).toBe('completed');
      const text = textOf(await download(done.audit_log_url, 'audit-late.pdf'));
      expect(text).toMatch(
        new RegExp(
          /Email to late@audit\.test via SMTP failed \(attempt 1 of 10\): [^()]*/.source +
            /421 Service not available, closing channel; will be retried \(fail_email\)/.source,
        ),
      );
      // The retry came after the completion: nothing was sent, and the events say so last.
      expect(
        smtp.messages.filter(
          (m) => m.envelope.rcptTo.includes('late@audit.test') && m.parsed.subject !== 'Your document copy',
        ),
      ).toHaveLength(0);
      const events = await eventsOf(t, alice.apiKey, client.submission_id, client.id);
      expect(events.filter((e) => e.eventType.endsWith('_email'))).toEqual([
        { eventType: 'fail_email', data: expect.objectContaining({ attempt: 1, retrying: true }) },
        {
          eventType: 'fail_email',
          data: expect.objectContaining({
            attempt: 1,
            retrying: false,
            reason: 'the party had completed or declined the form',
            error: expect.stringContaining('421'),
          }),
        },
      ]);
      const row = await t.db.emailMessage.findFirstOrThrow({
        where: { submitterId: client.id, kind: 'signature_request' },
      });
      expect(row.status).toBe('failed');
    },
  );

  it('says an email was only kept, not sent, when no email provider is configured', async () => {
    const t = withoutProvider;
    const api = (method: string, p: string, body?: unknown) => rest(t.url, bob.apiKey, method, p, body);
    const templateId = await createTemplate(t, bob.apiKey);
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        {
          role: 'Client',
          email: 'client@kept.test',
          completed: true,
          values: { 'Client Name': 'Kept Client', 'Client Signature': 'Kay' },
        },
        { role: 'Manager', email: 'manager@kept.test' },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const [client, manager] = created.json;
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(await eventsOf(t, bob.apiKey, client.submission_id, manager.id)).toEqual([
      {
        eventType: 'send_email',
        data: expect.objectContaining({ provider: 'outbox', attempt: 1, to: 'manager@kept.test' }),
      },
    ]);
    await api('PUT', `/submitters/${manager.id}`, { completed: true, values: { 'Manager Name': 'Kept Manager' } });
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    const done = (await api('GET', `/submissions/${client.submission_id}`)).json;
    const log = await download(done.audit_log_url, 'audit-outbox.pdf');
    const text = textOf(log);

    expect(text).toMatch(/Z Email to manager@kept\.test kept, not sent: no email provider configured \(send_email\)/);
    expect(text).not.toContain('Email sent');
    // A typed signature is shown as its image (rendered from the text when it was given), then its text.
    expect(text).toContain('CLIENT SIGNATURE Typed: Kay');
    expect(imagesOf(log)).toHaveLength(1);
    expect(pdfsig(log)).toContain('Signature is Valid');
  });

  it('a Japanese, Chinese or Korean signer: the log in their language, their CJK name drawn into the document', {
    timeout: 120_000,
  }, async () => {
    const t = withoutProvider;
    const api = (method: string, p: string, body?: unknown) => rest(t.url, bob.apiKey, method, p, body);
    const templateId = await createTemplate(t, bob.apiKey);
    const cases = [
      { language: 'ja', name: '山田太郎', title: '監査ログ', generated: '作成日時' },
      { language: 'zh', name: '张伟', title: '审计日志', generated: '生成时间' },
      { language: 'ko', name: '김민준', title: '감사 로그', generated: '생성 시각' },
    ];
    for (const { language, name, title, generated } of cases) {
      const created = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [
          {
            role: 'Client',
            email: `client-${language}@cjk.test`,
            language,
            completed: true,
            values: { 'Client Name': name, 'Client Signature': 'Kay' },
          },
          {
            role: 'Manager',
            email: `manager-${language}@cjk.test`,
            language,
            completed: true,
            values: { 'Manager Name': 'Manager' },
          },
        ],
      });
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      await t.jobs.waitForIdle({ timeoutMs: 60_000 });
      const done = (await api('GET', `/submissions/${created.json[0].submission_id}`)).json;
      const log = await download(done.audit_log_url, `audit-${language}.pdf`);
      const text = textOf(log);
      // The fixed texts in the signer's language (before the CJK font: "Signet Audit Log …").
      expect(text, language).toContain(`Signet ${title}`);
      expect(text, language).toContain(generated);
      expect(text, language).not.toContain('Audit Log');
      expect(text, language).toContain(name);
      // A subset of the CJK face: the log stays small (measured 68 KB signed, ~15 KB of it the CJK
      // subset of ~150 glyphs, test/audit-log.test.ts); the whole 5 MB face would be far over 150 KB.
      const size = fs.statSync(log).size;
      console.log(`audit log in ${language}: ${size} bytes`);
      expect(size, language).toBeLessThan(150_000);
      expect(pdfsig(log), language).toContain('Signature is Valid');

      const document = await download(done.documents[0].url, `document-${language}.pdf`);
      expect(textOf(document), language).toContain(name);
      // The CJK subset adds ~3 KB to the document (measured: 36.5 KB with a Latin name, 39.1 KB with 山田太郎).
      console.log(`document in ${language}: ${fs.statSync(document).size} bytes`);
      expect(fs.statSync(document).size, language).toBeLessThan(60_000);
    }
  });
});
