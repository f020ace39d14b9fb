/**
 * The completion pipeline through the API path (`completed: true`): each party's values drawn on
 * top of the previous party's, the final documents and the audit log signed (pdfsig), the audit
 * log's hashes matching the files, documents and audit_log_url in the responses; form.completed
 * and submission.completed emitted once each (dispatch-event jobs, deduplicated by key); the
 * completed emails (document copies to the parties, the completed email to the owner and to
 * bcc_completed) through a real SMTP server with the signed files attached; and running the
 * pipeline and the emails again changing nothing.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import pg from 'pg';
import { createSideEffects } from '../src/events/events.ts';
import { createMailer } from '../src/notifications/mailer.ts';
import { completeSubmission, type CompletionDeps } from '../src/signing/complete-submission.ts';
import { sendCompletedEmails } from '../src/signing/completed-emails.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { pdfsigValidPades } from './helpers/pades-verifier.ts';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from './helpers/smtp.ts';
import { subscribeToEveryEvent } from './helpers/webhook-receiver.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let sql: pg.Pool;
let alice: CreatedAccount;
let templateId: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-completion-'));

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

async function download(url: string, name: string): Promise<{ file: string; bytes: Buffer }> {
  const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
  const file = path.join(tmp, name);
  fs.writeFileSync(file, bytes);
  return { file, bytes };
}

const pdftotext = (file: string, page?: number) =>
  execFileSync('pdftotext', [...(page ? ['-f', String(page), '-l', String(page)] : []), file, '-']).toString();
const pdfsig = (file: string) => {
  try {
    return execFileSync('pdfsig', [file]).toString();
  } catch (error) {
    return String((error as { stdout?: Buffer }).stdout ?? error);
  }
};

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const mailsTo = (address: string): ReceivedMail[] => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));

/** The dispatch-event jobs (one per emitted event key), as stored by Agenda. */
async function dispatchedEvents(
  submissionId: number,
  submitterIds: number[],
): Promise<Array<{ key: string; type: string; recordId: number }>> {
  const keys = [`submission.completed:${submissionId}`, ...submitterIds.map((id) => `form.completed:${id}`)];
  const { rows } = await sql.query(
    `SELECT data->>'uniqueKey' AS key, data->'payload'->>'type' AS type,
            (data->'payload'->>'recordId')::int AS "recordId"
       FROM agenda.jobs WHERE name = 'dispatch-event' AND data->>'uniqueKey' = ANY($1) ORDER BY created_at, id`,
    [keys],
  );
  return rows;
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@example.test>' } });
  sql = new pg.Pool({ connectionString: t.database.url, max: 2 });
  alice = await t.createAccount({ name: 'Ακμή Ltd', email: 'alice@completion.test' });
  await subscribeToEveryEvent(t.db, alice.accountId);
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Two-page form',
    documents: [{ name: 'form', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
    fields: [
      { name: 'Client Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] },
      {
        name: 'Client Signature',
        type: 'signature',
        role: 'Client',
        areas: [{ x: 60, y: 120, w: 200, h: 40, page: 1 }],
      },
      { name: 'Manager Name', role: 'Manager', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 2 }] },
    ],
  });
  templateId = json.id;
});
afterAll(async () => {
  await sql?.end();
  await t?.close();
  await smtp?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('completion through the API', () => {
  it('draws every party’s values, signs the final documents and the audit log', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      bcc_completed: 'archive@example.test, Legal <legal@example.test>',
      submitters: [
        {
          role: 'Client',
          email: 'client@example.test',
          name: 'Ελένη Παπαδοπούλου',
          completed: true,
          values: { 'Client Name': 'Ελένη Παπαδοπούλου', 'Client Signature': 'Eleni P' },
        },
        { role: 'Manager', email: 'manager@example.test', name: 'Анна Иванова' },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const [client, manager] = created.json;
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    // The first party's documents exist; the submission is not complete yet.
    const partial = (await api('GET', `/submissions/${client.submission_id}`)).json;
    expect(partial.status).toBe('pending');
    expect(partial.submitters[0].documents).toHaveLength(1);
    expect(partial.audit_log_url).toBeNull();
    // The first party's form.completed is out as soon as its documents are; only the second
    // party's signature request has been mailed.
    expect(await dispatchedEvents(client.submission_id, [client.id, manager.id])).toEqual([
      { key: `form.completed:${client.id}`, type: 'form.completed', recordId: client.id },
    ]);
    expect(smtp.messages.map((m) => [m.envelope.rcptTo, m.parsed.subject])).toEqual([
      [[manager.email], 'You are invited to submit a form'],
    ]);

    await api('PUT', `/submitters/${manager.id}`, { completed: true, values: { 'Manager Name': 'Анна Иванова' } });
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const done = (await api('GET', `/submissions/${client.submission_id}`)).json;
    expect(done.status).toBe('completed');
    expect(done.completed_at).toMatch(/Z$/);
    expect(done.documents).toEqual([{ name: 'form', url: expect.stringContaining('/file/') }]);
    expect(done.audit_log_url).toEqual(expect.stringContaining('/file/'));

    const final = await download(done.documents[0].url, 'final.pdf');
    expect(pdftotext(final.file, 1)).toContain('Ελένη Παπαδοπούλου');
    // The typed signature is drawn as its image (test/typed-signatures.test.ts), not as text.
    expect(pdftotext(final.file, 1)).not.toContain('Eleni P');
    expect(execFileSync('pdfimages', ['-list', '-f', '1', '-l', '1', final.file]).toString()).toMatch(/ image /);
    expect(pdftotext(final.file, 2)).toContain('Анна Иванова');
    const signature = pdfsig(final.file);
    expect(signature).toContain('Signature is Valid');
    // PAdES B-LT (issue 17): the DSS revision follows the signature, which covers the whole file before it.
    expect(signature).toContain('Signature Type: ETSI.CAdES.detached');
    expect(pdfsigValidPades(final.bytes)).toBe(true);

    // One byte changed inside the signed range: the signature no longer verifies.
    const tampered = Buffer.from(final.bytes);
    const range = /\/ByteRange\s*\[\s*(\d+)\s+(\d+)/.exec(tampered.toString('latin1'));
    const firstRangeEnd = Number(range![2]);
    // Inside the first stream of the first signed range: the file still parses, the digest changes.
    const at = tampered.indexOf('stream') + 'stream'.length + 20;
    expect(at).toBeLessThan(firstRangeEnd);
    tampered[at] = tampered[at]! ^ 0x01;
    const tamperedFile = path.join(tmp, 'tampered.pdf');
    fs.writeFileSync(tamperedFile, tampered);
    const verdict = pdfsig(tamperedFile);
    expect(verdict).not.toContain('Signature is Valid');
    expect(verdict).toMatch(/Digest Mismatch|Invalid/i);

    const log = await download(done.audit_log_url, 'audit.pdf');
    expect(pdfsig(log.file)).toContain('Signature is Valid');
    const logText = pdftotext(log.file).replace(/\s+/g, ' ');
    expect(logText).toContain(String(client.submission_id));
    expect(logText).toContain('Анна Иванова');
    const finalHash = createHash('sha256').update(final.bytes).digest('hex');
    expect(logText.replace(/\s/g, '')).toContain(finalHash);

    // Each event once, in order: the parties' form.completed, then submission.completed.
    expect(await dispatchedEvents(client.submission_id, [client.id, manager.id])).toEqual([
      { key: `form.completed:${client.id}`, type: 'form.completed', recordId: client.id },
      { key: `form.completed:${manager.id}`, type: 'form.completed', recordId: manager.id },
      {
        key: `submission.completed:${client.submission_id}`,
        type: 'submission.completed',
        recordId: client.submission_id,
      },
    ]);

    // Emails: a copy to each party, the completed email to the owner and to each bcc_completed address.
    const expectedFiles = { 'form.pdf': finalHash, 'Audit Log - Two-page form.pdf': sha256(log.bytes) };
    const attachmentsOf = (mail: ReceivedMail) =>
      Object.fromEntries(mail.parsed.attachments.map((a) => [a.filename, sha256(a.content)]));
    for (const party of [client, manager]) {
      const [copy, ...more] = mailsTo(party.email).filter(
        (m) => m.parsed.subject !== 'You are invited to submit a form',
      );
      expect(more).toHaveLength(0);
      expect(copy!.parsed.subject).toBe('Your document copy');
      expect(copy!.parsed.text).toContain('Please check the copy of your "Two-page form" in the email attachments.');
      expect(copy!.parsed.text).toContain(party.embed_src);
      expect(attachmentsOf(copy!)).toEqual(expectedFiles);
    }
    for (const address of ['alice@completion.test', 'archive@example.test', 'legal@example.test']) {
      const [mail, ...more] = mailsTo(address);
      expect(more, address).toHaveLength(0);
      expect(mail!.parsed.subject).toBe('Two-page form has been completed by Ελένη Παπαδοπούλου, Анна Иванова');
      expect(mail!.envelope.rcptTo).toEqual([address]);
      expect(mail!.parsed.text).toContain('The signed documents and the audit log are attached.');
      expect(attachmentsOf(mail!)).toEqual(expectedFiles);
    }
    expect(smtp.messages).toHaveLength(6);
  });

  it('running the pipeline and the emails again produces nothing new', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Client', email: 'c2@example.test', completed: true, values: { 'Client Name': 'Once' } },
        { role: 'Manager', email: 'm2@example.test', completed: true },
      ],
    });
    const submissionId = created.json[0].submission_id;
    const submitterIds = created.json.map((s: { id: number }) => s.id);
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    const before = await t.db.completedDocument.findMany({ where: { submissionId } });
    expect(before.map((d) => d.kind).sort()).toEqual(['audit_log', 'document', 'document']);
    const events = await dispatchedEvents(submissionId, submitterIds);
    expect(events.map((e) => e.key)).toEqual([
      ...submitterIds.map((id: number) => `form.completed:${id}`),
      `submission.completed:${submissionId}`,
    ]);
    const mails = smtp.messages.length;
    expect(mailsTo('c2@example.test')).toHaveLength(1);

    const deps: CompletionDeps = {
      db: t.db,
      storage: t.app.files.storage,
      config: t.config,
      effects: createSideEffects({ db: t.db, jobs: t.app.jobs }),
    };
    await completeSubmission(deps, submissionId);
    await completeSubmission(deps, submissionId);
    const emailDeps = {
      db: t.db,
      storage: t.app.files.storage,
      mailer: createMailer(t.config, console),
      config: t.config,
      logger: console,
    };
    await sendCompletedEmails(emailDeps, submissionId);
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    expect(await t.db.completedDocument.count({ where: { submissionId } })).toBe(before.length);
    expect(await dispatchedEvents(submissionId, submitterIds)).toEqual(events);
    expect(smtp.messages).toHaveLength(mails);
  });

  it('two runs at once make one set of documents and one audit log (the completion lock)', async () => {
    const created = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        { role: 'Client', email: 'c3@example.test', completed: true, values: { 'Client Name': 'Twice' } },
        { role: 'Manager', email: 'm3@example.test', completed: true },
      ],
    });
    const submissionId = created.json[0].submission_id;
    const [client, manager] = created.json.map((s: { id: number }) => s.id);
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    // As if the job had not run yet: its output removed. Then two runs start together; without
    // the lock both would draw, and the second set or audit log would be written (or refused).
    await t.db.completedDocument.deleteMany({ where: { submissionId } });
    const deps: CompletionDeps = {
      db: t.db,
      storage: t.app.files.storage,
      config: t.config,
      effects: createSideEffects({ db: t.db, jobs: t.app.jobs }),
    };
    await Promise.all([completeSubmission(deps, submissionId), completeSubmission(deps, submissionId)]);
    const rows = await t.db.completedDocument.findMany({ where: { submissionId }, orderBy: { id: 'asc' } });
    expect(rows.map((d) => [d.kind, d.submitterId])).toEqual([
      ['document', client],
      ['document', manager],
      ['audit_log', null],
    ]);
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
  });

  it('mails nobody when every party has send_email false, and no completed email to an owner who signed', async () => {
    const quiet = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      bcc_completed: 'quiet-archive@example.test',
      submitters: [
        { role: 'Client', email: 'quiet1@example.test', completed: true },
        { role: 'Manager', email: 'quiet2@example.test', completed: true },
      ],
    });
    const own = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [
        { role: 'Client', email: 'alice@completion.test', completed: true },
        { role: 'Manager', email: 'm3@example.test', send_email: false, completed: true },
      ],
    });
    const mails = smtp.messages.length;
    await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
    for (const created of [quiet, own]) {
      expect((await api('GET', `/submissions/${created.json[0].submission_id}`)).json.status).toBe('completed');
    }
    // Only the owner's copy as a party: no completed email to the owner, none to the quiet ones.
    const sent = smtp.messages.slice(mails);
    expect(sent.map((m) => [m.envelope.rcptTo, m.parsed.subject])).toEqual([
      [['alice@completion.test'], 'Your document copy'],
    ]);
  });

  it(
    'follows DocuSeal’s rule for the owner’s completed email: ' + 'the request’s send_email, not the parties’',
    async () => {
      const subjectOf = (m: ReceivedMail) => [m.envelope.rcptTo.join(','), m.parsed.subject];
      // send_email true for the request, every party quiet: the owner and bcc_completed are mailed.
      const quietParties = await api('POST', '/submissions', {
        template_id: templateId,
        bcc_completed: 'rule-archive@example.test',
        submitters: [
          { role: 'Client', email: 'rule1@example.test', send_email: false, completed: true },
          { role: 'Manager', email: 'rule2@example.test', send_email: false, completed: true },
        ],
      });
      let mails = smtp.messages.length;
      await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
      expect((await api('GET', `/submissions/${quietParties.json[0].submission_id}`)).json.status).toBe('completed');
      expect(smtp.messages.slice(mails).map(subjectOf).sort()).toEqual([
        ['alice@completion.test', expect.stringContaining('has been completed')],
        ['rule-archive@example.test', expect.stringContaining('has been completed')],
      ]);
      // send_email false for the request, one party asking for mail: its copy only, not the owner's email.
      const quietRequest = await api('POST', '/submissions', {
        template_id: templateId,
        send_email: false,
        bcc_completed: 'rule-archive@example.test',
        submitters: [
          { role: 'Client', email: 'rule3@example.test', send_email: true, completed: true },
          { role: 'Manager', email: 'rule4@example.test', completed: true },
        ],
      });
      mails = smtp.messages.length;
      await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
      expect((await api('GET', `/submissions/${quietRequest.json[0].submission_id}`)).json.status).toBe('completed');
      expect(smtp.messages.slice(mails).map(subjectOf)).toEqual([['rule3@example.test', 'Your document copy']]);
      // The owner as a quiet party still gets the completed email (DocuSeal: user_submitter send_email false).
      const ownerQuiet = await api('POST', '/submissions', {
        template_id: templateId,
        submitters: [
          { role: 'Client', email: 'alice@completion.test', send_email: false, completed: true },
          { role: 'Manager', email: 'rule5@example.test', send_email: false, completed: true },
        ],
      });
      mails = smtp.messages.length;
      await t.app.jobs.waitForIdle({ timeoutMs: 30_000 });
      expect((await api('GET', `/submissions/${ownerQuiet.json[0].submission_id}`)).json.status).toBe('completed');
      expect(smtp.messages.slice(mails).map(subjectOf)).toEqual([
        ['alice@completion.test', expect.stringContaining('has been completed')],
      ]);
    },
  );
});
