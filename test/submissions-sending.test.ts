/**
 * Sending in order, end to end: the service runs its jobs, mails go to a real in-process SMTP
 * server, and the test reads each mail (mailparser) and follows its signing link.
 * preserved: the first party at creation, the next once the first completes; random: everyone;
 * send_email false: nobody; a provider outage does not fail the API call and nothing is sent twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let alice: CreatedAccount;
let templateId: number;
/** A local stand-in for Twilio's Messages API: records each request as Twilio documents it. */
const twilioRequests: { path: string; auth: string | undefined; form: URLSearchParams }[] = [];
let twilio: import('node:http').Server;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

const linkIn = (text: string) => /https?:\/\/\S+\/s\/[A-Za-z0-9]+/.exec(text)?.[0];
const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));

beforeAll(async () => {
  smtp = await startSmtpServer();
  const { createServer } = await import('node:http');
  twilio = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      twilioRequests.push({ path: req.url ?? '', auth: req.headers.authorization, form: new URLSearchParams(body) });
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ sid: `SM${twilioRequests.length}` }));
    });
  });
  await new Promise<void>((resolve) => twilio.listen(0, '127.0.0.1', resolve));
  const { port } = twilio.address() as import('node:net').AddressInfo;
  t = await startTestApp({
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Signet <signet@example.test>',
      SEND_RETRY_BASE_MS: '200',
      TWILIO_ACCOUNT_SID: 'AC123',
      TWILIO_AUTH_TOKEN: 'secret-token',
      TWILIO_FROM: '+15550000000',
      TWILIO_API_URL: `http://127.0.0.1:${port}`,
    },
  });
  alice = await t.createAccount({ name: 'Acme Inc', email: 'alice@sending.test', firstName: 'Alice' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'Employment contract',
    documents: [{ name: 'contract', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      {
        name: 'Employee Signature',
        type: 'signature',
        role: 'Employee',
        areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }],
      },
      {
        name: 'Employer Signature',
        type: 'signature',
        role: 'Employer',
        areas: [{ x: 72, y: 200, w: 150, h: 40, page: 1 }],
      },
    ],
  });
  templateId = json.id;
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  twilio?.close();
});

describe('sending in order', () => {
  it('preserved: emails the first party, then the next once the first completes', async () => {
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      reply_to: 'hr@acme.test',
      submitters: [
        { role: 'Employee', email: 'emma@example.test', name: 'Emma' },
        { role: 'Employer', email: 'boss@example.test', name: 'Bob' },
      ],
    });
    expect(status).toBe(200);
    const [employee, employer] = json;
    await t.app.jobs.waitForIdle();
    const first = mailsTo('emma@example.test');
    expect(first).toHaveLength(1);
    expect(mailsTo('boss@example.test')).toHaveLength(0);
    const mail = first[0]!.parsed;
    expect(mail.subject).toBe('You are invited to sign a document');
    expect(mail.from?.text).toContain('signet@example.test');
    expect(mail.replyTo?.text).toContain('hr@acme.test');
    expect(mail.text).toContain('Acme Inc');
    // The link in the mail is the first party's signing link.
    const link = linkIn(mail.text ?? '');
    expect(link).toBe(employee.embed_src);
    const page = await fetch(link!);
    expect(page.url).toBe(link);

    const events = await t.db.submissionEvent.findMany({ where: { submitterId: employee.id } });
    expect(events.map((e) => e.eventType)).toEqual(['send_email']);
    const sentRow = await t.db.emailMessage.findFirstOrThrow({ where: { submitterId: employee.id } });
    // Which provider took it, on which attempt, to whom (the audit log prints it).
    expect(events[0]!.data).toEqual({
      email_message_id: sentRow.id,
      provider: 'smtp',
      attempt: 1,
      to: 'emma@example.test',
    });

    // The first party completes through the API: the second is sent now.
    await api('PUT', `/submitters/${employee.id}`, { completed: true });
    await t.app.jobs.waitForIdle();
    const second = mailsTo('boss@example.test');
    expect(second).toHaveLength(1);
    expect(linkIn(second[0]!.parsed.text ?? '')).toBe(employer.embed_src);
    const employerNow = (await api('GET', `/submitters/${employer.id}`)).json;
    expect(employerNow.status).toBe('sent');
    expect(employerNow.sent_at).toMatch(/Z$/);
    // Not sent at creation: sent_at is the time the mail went out, recorded with its send_email event.
    const employerRow = await t.db.emailMessage.findFirstOrThrow({ where: { submitterId: employer.id } });
    expect(new Date(employerNow.sent_at).getTime()).toBe(employerRow.sentAt!.getTime());
    expect(
      (await t.db.submissionEvent.findMany({ where: { submitterId: employer.id } })).map((e) => [e.eventType, e.data]),
    ).toEqual([
      ['send_email', { email_message_id: employerRow.id, provider: 'smtp', attempt: 1, to: 'boss@example.test' }],
    ]);
    // Nothing was sent twice.
    await t.app.jobs.waitForIdle();
    expect(mailsTo('emma@example.test')).toHaveLength(1);
  });

  it('random: everyone at once; a party with send_email false is never contacted', async () => {
    await api('POST', '/submissions', {
      template_id: templateId,
      order: 'random',
      submitters: [
        { role: 'Employee', email: 'r1@example.test' },
        { role: 'Employer', email: 'r2@example.test', send_email: false },
      ],
    });
    await t.app.jobs.waitForIdle();
    expect(mailsTo('r1@example.test')).toHaveLength(1);
    expect(mailsTo('r2@example.test')).toHaveLength(0);
  });

  it('uses the custom message with DocuSeal variables', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      message: {
        subject: 'Please sign {{template.name}}',
        body: 'Hello {{submitter.name}}, sign here: {{submitter.link}} — {{account.name}} (#{{submission.id}})',
      },
      submitters: [{ role: 'Employee', email: 'custom@example.test', name: 'Cora' }],
    });
    await t.app.jobs.waitForIdle();
    const [mail] = mailsTo('custom@example.test');
    expect(mail!.parsed.subject).toBe('Please sign Employment contract');
    // The email's link carries the signer's click tag (src/submissions/signing-links.ts).
    expect(mail!.parsed.text).toContain(`Hello Cora, sign here: ${json[0].embed_src}?t=`);
    expect(mail!.parsed.text).toMatch(/\?t=[\w-]{6} — Acme Inc \(#\d+\)/);
    expect(mail!.parsed.text).toContain(`(#${json[0].submission_id})`);
  });

  it('a provider outage does not fail the API call; the mail goes out once when it recovers', async () => {
    smtp.rejectNext(451, 'Try again later');
    const { status } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Employee', email: 'retry@example.test' }],
    });
    expect(status).toBe(200);
    await t.app.jobs.waitForIdle({ timeoutMs: 10_000, withinMs: 5_000 });
    expect(mailsTo('retry@example.test')).toHaveLength(1);
    const rows = await t.db.emailMessage.findMany({ where: { to: { has: 'retry@example.test' } } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'sent', attemptCount: 2 });
    // The failed attempt is recorded as failed and retried, then the send by the run that made it.
    const events = await t.db.submissionEvent.findMany({
      where: { submitterId: rows[0]!.submitterId! },
      orderBy: { id: 'asc' },
    });
    expect(events.map((e) => [e.eventType, e.data])).toEqual([
      [
        'fail_email',
        {
          email_message_id: rows[0]!.id,
          provider: 'smtp',
          attempt: 1,
          to: 'retry@example.test',
          error: expect.stringContaining('451 Try again later'),
          max_attempts: 10,
          retrying: true,
        },
      ],
      ['send_email', { email_message_id: rows[0]!.id, provider: 'smtp', attempt: 2, to: 'retry@example.test' }],
    ]);
    // REST lists both, under DocuSeal's item shape.
    const submitter = (await api('GET', `/submitters/${rows[0]!.submitterId}`)).json;
    expect(submitter.submission_events.map((e: { event_type: string }) => e.event_type)).toEqual([
      'fail_email',
      'send_email',
    ]);
  });

  it('a refused email is recorded as failed and not retried, with no send_email', async () => {
    smtp.rejectNext(550, 'Mailbox unavailable');
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Employee', email: 'refused@example.test' }],
    });
    await t.app.jobs.waitForIdle({ timeoutMs: 10_000 });
    expect(mailsTo('refused@example.test')).toHaveLength(0);
    const row = await t.db.emailMessage.findFirstOrThrow({ where: { submitterId: json[0].id } });
    expect(row).toMatchObject({ status: 'failed', attemptCount: 1 });
    const events = await t.db.submissionEvent.findMany({ where: { submitterId: json[0].id } });
    expect(events.map((e) => [e.eventType, e.data])).toEqual([
      [
        'fail_email',
        {
          email_message_id: row.id,
          provider: 'smtp',
          attempt: 1,
          to: 'refused@example.test',
          error: expect.stringContaining('550 Mailbox unavailable'),
          max_attempts: 10,
          retrying: false,
        },
      ],
    ]);
  });

  it('sends SMS through Twilio when send_sms is on, recording send_sms', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      send_sms: true,
      submitters: [{ role: 'Employee', phone: '+15551234567', name: 'Sam' }],
    });
    await t.app.jobs.waitForIdle();
    expect(twilioRequests).toHaveLength(1);
    const [request] = twilioRequests;
    expect(request!.path).toBe('/2010-04-01/Accounts/AC123/Messages.json');
    expect(request!.auth).toBe(`Basic ${Buffer.from('AC123:secret-token').toString('base64')}`);
    expect(request!.form.get('To')).toBe('+15551234567');
    expect(request!.form.get('From')).toBe('+15550000000');
    expect(request!.form.get('Body')).toContain(json[0].embed_src);
    const events = await t.db.submissionEvent.findMany({ where: { submitterId: json[0].id } });
    expect(events.map((e) => [e.eventType, e.data])).toEqual([
      ['send_sms', { sms_message_id: expect.any(Number), provider: 'twilio', attempt: 1, to: '+15551234567' }],
    ]);
  });

  it('re-sends the request on PUT /submitters/{id} with send_email true', async () => {
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      submitters: [{ role: 'Employee', email: 'again@example.test' }],
    });
    await t.app.jobs.waitForIdle();
    expect(mailsTo('again@example.test')).toHaveLength(1);
    await api('PUT', `/submitters/${json[0].id}`, { send_email: true });
    await t.app.jobs.waitForIdle();
    expect(mailsTo('again@example.test')).toHaveLength(2);
    const rows = await t.db.emailMessage.findMany({ where: { submitterId: json[0].id }, orderBy: { id: 'asc' } });
    const events = await t.db.submissionEvent.findMany({
      where: { submitterId: json[0].id, eventType: 'send_email' },
      orderBy: { id: 'asc' },
    });
    expect(events.map((e) => e.data)).toEqual(
      rows.map((r) => ({ email_message_id: r.id, provider: 'smtp', attempt: 1, to: 'again@example.test' })),
    );
  });

  it('an expire_at that passes makes the submission expired', async () => {
    // Far enough ahead that the create and the read below finish before it on a busy machine.
    const soon = new Date(Date.now() + 3000).toISOString();
    const { json } = await api('POST', '/submissions', {
      template_id: templateId,
      expire_at: soon,
      submitters: [{ role: 'Employee', email: 'exp@example.test' }],
    });
    expect((await api('GET', `/submissions/${json[0].submission_id}`)).json.status).toBe('pending');
    await t.app.jobs.waitForIdle({ withinMs: 5000, timeoutMs: 20_000 });
    expect((await api('GET', `/submissions/${json[0].submission_id}`)).json.status).toBe('expired');
  });
});
