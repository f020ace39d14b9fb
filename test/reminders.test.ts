/**
 * Reminders (issue 16; docs/reminders.md), end to end on a real server: REST and GraphQL set them
 * (on a submission, and as the account's default), the service's jobs send them to a real SMTP
 * server and a local stand-in of Twilio's Messages API, and the test moves the service's clock
 * (test/helpers/clock.ts, buildApp's `clock`) instead of waiting hours. Each test counts the
 * messages each address received, told apart by the Message-ID each stored email keeps
 * (`reminder:<submitter>:<number>:<address>`), and reads the events they recorded.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb } from '../src/db/client.ts';
import { createSideEffects } from '../src/events/events.ts';
import { messageIdFor } from '../src/notifications/deliver.ts';
import { scanReminders } from '../src/submissions/reminders.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { createTestClock, type TestClock } from './helpers/clock.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

const MAIL_FROM = 'Signet <signet@reminders.test>';
const HOUR_MS = 3_600_000;

let t: TestApp;
let smtp: TestSmtpServer;
let clock: TestClock;
let alice: CreatedAccount;
let templateId: number;
/** The Twilio stand-in's requests: To and Body of each SMS. */
const sms: { to: string; body: string }[] = [];
let twilio: http.Server;

const api = (method: string, path: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, path, body);
const gql = (query: string, variables?: Record<string, unknown>, key = alice.apiKey) =>
  graphql(t.url, query, { key, variables });
const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));
const linkIn = (text: string | undefined) => /https?:\/\/\S+\/s\/[A-Za-z0-9]+/.exec(text ?? '')?.[0];
/** The Message-ID of a party's reminder `number` to `to` (src/notifications/deliver.ts messageIdFor). */
const reminderId = (submitterId: number, number: number, to: string) =>
  messageIdFor(`reminder:${submitterId}:${number}:${to}`, MAIL_FROM);
/** The Message-IDs `address` received, in order. */
const idsTo = (address: string) => mailsTo(address).map((m) => m.parsed.messageId);
const requestId = (submitterId: number) => messageIdFor(`signature_request:${submitterId}:0`, MAIL_FROM);
const eventsOf = async (submitterId: number) =>
  (await t.db.submissionEvent.findMany({ where: { submitterId }, orderBy: { id: 'asc' } })).map((e) => ({
    type: e.eventType,
    data: e.data as Record<string, unknown>,
  }));

/**
 * Moves the clock forward, runs a reminder scan (as the timer would) and waits for the jobs it
 * recorded to run; resolves to the reminders the scan recorded.
 */
async function later(hours: number): Promise<number> {
  clock.advanceHours(hours);
  const recorded = await t.app.reminders.scan();
  await t.jobs.waitForIdle();
  return recorded;
}

/** POST /submissions of the one-role template; the created submitters. */
async function create(body: Record<string, unknown>, key = alice.apiKey): Promise<any[]> {
  const { status, json } = await api('POST', '/submissions', { template_id: templateId, ...body }, key);
  expect(status, JSON.stringify(json)).toBe(200);
  await t.jobs.waitForIdle();
  return json;
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  twilio = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      sms.push({ to: form.get('To') ?? '', body: form.get('Body') ?? '' });
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ sid: `SM${sms.length}` }));
    });
  });
  await new Promise<void>((resolve) => twilio.listen(0, '127.0.0.1', resolve));
  clock = createTestClock();
  t = await startTestApp({
    clock,
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM,
      // A failed send is retried after 1.5 s: long enough for a test to close the form meanwhile.
      SEND_RETRY_BASE_MS: '1500',
      TWILIO_ACCOUNT_SID: 'AC123',
      TWILIO_AUTH_TOKEN: 'secret-token',
      TWILIO_FROM: '+15550000000',
      TWILIO_API_URL: `http://127.0.0.1:${(twilio.address() as AddressInfo).port}`,
      // The timer's scans stay out of the way: each test scans when it has moved the clock.
      REMINDER_SCAN_SECONDS: '3600',
    },
  });
  alice = await t.createAccount({ name: 'Acme Inc', email: 'alice@reminders.test' });
  const { json } = await api('POST', '/templates/pdf', {
    name: 'NDA',
    documents: [{ name: 'nda', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
    ],
  });
  templateId = json.id;
});

afterAll(async () => {
  await t?.close();
  await smtp?.close();
  twilio?.close();
});

describe('reminders by email', () => {
  it('POST /submissions: the first after N hours, then every M hours, at most K times; events and shapes', async () => {
    const [ada] = await create({
      reminders: { first_after_hours: 24, every_hours: 48, max_count: 2 },
      submitters: [{ role: 'Signer', email: 'ada@reminders.test', name: 'Ada' }],
    });
    expect(idsTo('ada@reminders.test')).toEqual([requestId(ada.id)]);

    expect(await later(23)).toBe(0);
    expect(idsTo('ada@reminders.test')).toHaveLength(1);
    expect(await later(2)).toBe(1); // 25 h
    const mails = mailsTo('ada@reminders.test');
    expect(mails.map((m) => m.parsed.messageId)).toEqual([
      requestId(ada.id),
      reminderId(ada.id, 1, 'ada@reminders.test'),
    ]);
    // The request again (DocuSeal's reminder email has the invitation's text), with the party's link.
    expect(mails[1]!.parsed.subject).toBe(mails[0]!.parsed.subject);
    expect(linkIn(mails[1]!.parsed.text)).toBe(ada.embed_src);

    expect(await later(47)).toBe(0); // 72 h: the second is due 48 h after the first, at 73 h
    expect(idsTo('ada@reminders.test')).toHaveLength(2);
    expect(await later(2)).toBe(1); // 74 h
    expect(await later(24 * 30)).toBe(0); // max_count reached
    expect(idsTo('ada@reminders.test')).toEqual([
      requestId(ada.id),
      reminderId(ada.id, 1, 'ada@reminders.test'),
      reminderId(ada.id, 2, 'ada@reminders.test'),
    ]);

    const events = await eventsOf(ada.id);
    expect(events.map((e) => e.type)).toEqual(['send_email', 'send_reminder_email', 'send_reminder_email']);
    const reminderRow = await t.db.emailMessage.findUniqueOrThrow({
      where: { dedupeKey: `reminder:${ada.id}:1:ada@reminders.test` },
    });
    expect(reminderRow.kind).toBe('reminder');
    expect(events[1]!.data).toEqual({
      email_message_id: reminderRow.id,
      provider: 'smtp',
      attempt: 1,
      to: 'ada@reminders.test',
    });
    // REST lists them among submission_events (data narrowed to DocuSeal's keys, as every event's).
    const { json: submission } = await api('GET', `/submissions/${ada.submission_id}`);
    expect(submission.submission_events.map((e: any) => [e.event_type, e.submitter_id, e.data])).toEqual([
      ['send_email', ada.id, {}],
      ['send_reminder_email', ada.id, {}],
      ['send_reminder_email', ada.id, {}],
    ]);
    // GraphQL: the settings that apply.
    const read = await gql(
      `query { submission(id: ${ada.submission_id}) {
         reminders { firstAfterHours everyHours maxCount sendEmail sendSms } } }`,
    );
    expect(read.body.data.submission.reminders).toEqual({
      firstAfterHours: 24,
      everyHours: 48,
      maxCount: 2,
      sendEmail: true,
      sendSms: false,
    });
  });

  it('createSubmissions (GraphQL) takes reminders; two instances scanning at once record one reminder', async () => {
    const created = await gql(
      `mutation Create($input: CreateSubmissionsInput!) {
         createSubmissions(input: $input) {
           submissions { reminders { firstAfterHours everyHours maxCount sendEmail sendSms } }
           submitters { id }
         }
       }`,
      {
        input: {
          templateId,
          reminders: { firstAfterHours: 1, maxCount: 1 },
          submitters: [{ role: 'Signer', email: 'grace@reminders.test' }],
        },
      },
    );
    expect(created.body.errors).toBeUndefined();
    expect(created.body.data.createSubmissions.submissions[0].reminders).toEqual({
      firstAfterHours: 1,
      everyHours: null,
      maxCount: 1,
      sendEmail: true,
      sendSms: false,
    });
    const grace = created.body.data.createSubmissions.submitters[0].id as number;
    await t.jobs.waitForIdle();

    // Another instance: its own database client and side effects, on the same database and clock.
    const other = createDb(t.database.url, { poolSize: 2 });
    try {
      clock.advanceHours(2);
      const counts = await Promise.all([
        t.app.reminders.scan(),
        scanReminders({ db: other, effects: createSideEffects({ db: other, jobs: t.jobs }), clock }),
        t.app.reminders.scan(),
      ]);
      expect(counts.reduce((a, b) => a + b)).toBe(1);
      await t.jobs.waitForIdle();
      expect(idsTo('grace@reminders.test')).toEqual([requestId(grace), reminderId(grace, 1, 'grace@reminders.test')]);
    } finally {
      await other.$disconnect();
    }
  });

  it.each([
    ['completes', 'the party had completed or declined the form'],
    ['declines', 'the party had completed or declined the form'],
    ['is archived', 'the submission or its template was archived'],
    ['expires', 'the submission had expired'],
  ])('a reminder job that runs after the submission %s does nothing; no more are scheduled', async (what, reason) => {
    const email = `${what.replace(/\W/g, '-')}@reminders.test`;
    const [party] = await create({
      reminders: { first_after_hours: 2, every_hours: 2, max_count: 5 },
      ...(what === 'expires' ? { expire_at: new Date(clock.now().getTime() + 3 * HOUR_MS).toISOString() } : {}),
      submitters: [{ role: 'Signer', email }],
    });
    // Reminder 1 is recorded, and its first send fails: its job waits 1.5 s for a retry.
    smtp.rejectNext(451);
    expect(await later(2.5)).toBe(1);
    expect((await eventsOf(party.id)).at(-1)).toMatchObject({ type: 'fail_email', data: { retrying: true } });

    if (what === 'completes')
      expect((await api('PUT', `/submitters/${party.id}`, { completed: true })).status).toBe(200);
    if (what === 'declines') {
      const declined = await graphql(
        t.url,
        `mutation { declineSigningForm(slug: "${party.slug}", reason: "No") { state } }`,
      );
      expect(declined.body.errors).toBeUndefined();
    }
    if (what === 'is archived') expect((await api('DELETE', `/submissions/${party.submission_id}`)).status).toBe(200);
    if (what === 'expires') clock.advanceHours(1); // 3.5 h: past expire_at
    // The retry runs now, finds the form closed, and gives the reminder up.
    await t.jobs.waitForIdle({ withinMs: 5000, timeoutMs: 30_000 });
    expect((await eventsOf(party.id)).filter((e) => e.type.startsWith('fail_')).at(-1)).toMatchObject({
      type: 'fail_email',
      data: { retrying: false, reason },
    });
    // Later scans record nothing more for the party.
    await later(48);
    const reminders = [1, 2, 3, 4, 5].map((n) => reminderId(party.id, n, email));
    expect(idsTo(email).filter((id) => reminders.includes(id!))).toEqual([]);
    expect((await eventsOf(party.id)).filter((e) => e.type === 'send_reminder_email')).toEqual([]);
    expect((await t.db.reminderSchedule.findUniqueOrThrow({ where: { submitterId: party.id } })).nextAt).toBeNull();
  });

  it('a new email (PUT /submitters) starts them again; a reminder due to the old address does nothing', async () => {
    const [party] = await create({
      reminders: { first_after_hours: 24, every_hours: 24, max_count: 2 },
      submitters: [{ role: 'Signer', email: 'old@reminders.test' }],
    });
    smtp.rejectNext(451);
    expect(await later(25)).toBe(1); // reminder 1 to the old address fails and waits for a retry
    expect((await api('PUT', `/submitters/${party.id}`, { email: 'new@reminders.test' })).status).toBe(200);
    await t.jobs.waitForIdle({ withinMs: 5000, timeoutMs: 30_000 });
    expect((await eventsOf(party.id)).at(-1)).toMatchObject({
      type: 'fail_email',
      data: { retrying: false, reason: "the party's email changed", to: 'old@reminders.test' },
    });

    // Counted again from the change (25 h): the first to the new address at 49 h, the second at 73 h.
    expect(await later(23)).toBe(0);
    expect(await later(2)).toBe(1);
    expect(await later(24)).toBe(1);
    expect(await later(100)).toBe(0);
    expect(idsTo('old@reminders.test')).toEqual([requestId(party.id)]);
    expect(idsTo('new@reminders.test')).toEqual([
      reminderId(party.id, 1, 'new@reminders.test'),
      reminderId(party.id, 2, 'new@reminders.test'),
    ]);
    expect(linkIn(mailsTo('new@reminders.test')[0]!.parsed.text)).toBe(party.embed_src);
  });

  it('PUT /submissions/{id} sets reminders for parties already sent, counted from their request', async () => {
    const [party] = await create({ submitters: [{ role: 'Signer', email: 'later@reminders.test' }] });
    expect(await later(30)).toBe(0); // none asked for
    const { status, json } = await api('PUT', `/submissions/${party.submission_id}`, {
      reminders: { first_after_hours: 24, every_hours: 24, max_count: 2 },
    });
    expect(status, JSON.stringify(json)).toBe(200);
    // The request went out 30 h ago: the first is due at once, the second 24 h after it.
    expect(await later(0)).toBe(1);
    expect(await later(23)).toBe(0);
    expect(await later(2)).toBe(1);
    expect(idsTo('later@reminders.test')).toEqual([
      requestId(party.id),
      reminderId(party.id, 1, 'later@reminders.test'),
      reminderId(party.id, 2, 'later@reminders.test'),
    ]);
    // {max_count: 0} turns them off (GraphQL updateSubmission, the same definition).
    const [other] = await create({
      reminders: { first_after_hours: 1, every_hours: 1, max_count: 5 },
      submitters: [{ role: 'Signer', email: 'stopped@reminders.test' }],
    });
    expect(await later(1.5)).toBe(1);
    const off = await gql(
      `mutation { updateSubmission(input: { id: ${other.submission_id}, reminders: { maxCount: 0 } }) {
         submission { reminders { maxCount } } } }`,
    );
    expect(off.body.data.updateSubmission.submission.reminders).toEqual({ maxCount: 0 });
    expect(await later(10)).toBe(0);
    expect(idsTo('stopped@reminders.test')).toHaveLength(2);
  });

  it('the audit log lists each reminder', async () => {
    const [party] = await create({
      reminders: { first_after_hours: 1, max_count: 1 },
      submitters: [{ role: 'Signer', email: 'audit@reminders.test', name: 'Audrey' }],
    });
    expect(await later(2)).toBe(1);
    const done = await api('PUT', `/submitters/${party.id}`, { completed: true, values: { Signature: 'Audrey' } });
    expect(done.status).toBe(200);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const { json } = await api('GET', `/submissions/${party.submission_id}`);
    expect(json.audit_log_url).toBeTruthy();
    const file = path.join(os.tmpdir(), `signet-reminders-audit-${party.id}.pdf`);
    fs.writeFileSync(file, Buffer.from(await (await fetch(json.audit_log_url)).arrayBuffer()));
    try {
      const text = execFileSync('pdftotext', [file, '-']).toString().replace(/\s+/g, ' ');
      expect(text).toContain('Email sent to audit@reminders.test via SMTP');
      expect(text).toContain('Reminder email sent to audit@reminders.test via SMTP');
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

describe('the other create routes', () => {
  it('POST /submissions/init, /templates/{id}/submissions, /submissions/emails, /submissions/pdf', async () => {
    const reminders = { first_after_hours: 5, every_hours: 7, max_count: 3, send_sms: true };
    const expected = { firstAfterHours: 5, everyHours: 7, maxCount: 3, sendEmail: true, sendSms: true };
    const submitters = [{ role: 'Signer', email: 'routes@reminders.test' }];
    const answers = await Promise.all([
      api('POST', '/submissions/init', { template_id: templateId, reminders, submitters }),
      api('POST', `/templates/${templateId}/submissions`, { reminders, submitters }),
      api('POST', '/submissions/emails', { template_id: templateId, emails: 'routes@reminders.test', reminders }),
      api('POST', '/submissions/pdf', {
        reminders,
        documents: [
          {
            name: 'one-off',
            file: base64(fixturePdf('documenso-letter-size.pdf')),
            fields: [
              { name: 'Sign', type: 'signature', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
            ],
          },
        ],
        submitters,
      }),
    ]);
    const ids = answers.map(({ status, json }) => {
      expect(status, JSON.stringify(json)).toBe(200);
      return Array.isArray(json) ? json[0].submission_id : json.id;
    });
    for (const id of ids) {
      const read = await gql(
        `query { submission(id: ${id}) { reminders { firstAfterHours everyHours maxCount sendEmail sendSms } } }`,
      );
      expect(read.body.data.submission.reminders).toEqual(expected);
    }
    // Each still refuses nonsense.
    const refused = await api('POST', '/submissions/emails', {
      template_id: templateId,
      emails: 'routes@reminders.test',
      reminders: { max_count: 3, first_after_hours: 5 },
    });
    expect(refused).toMatchObject({
      status: 422,
      json: { error: 'every_hours is required when max_count is over 1 in `reminders`.' },
    });
    await t.jobs.waitForIdle();
    for (const id of ids) await api('DELETE', `/submissions/${id}`);
  });
});

describe('reminders by SMS', () => {
  it('go to the phone through Twilio; a new phone (GraphQL updateSubmitter) starts them again', async () => {
    const [party] = await create({
      send_sms: true,
      send_email: false,
      reminders: { first_after_hours: 6, every_hours: 6, max_count: 2, send_email: false, send_sms: true },
      submitters: [{ role: 'Signer', phone: '+15551230001', email: 'sms@reminders.test' }],
    });
    const toFirst = () => sms.filter((m) => m.to === '+15551230001');
    expect(toFirst()).toHaveLength(1); // the request
    expect(await later(7)).toBe(1);
    expect(toFirst()).toHaveLength(2);
    expect(toFirst()[1]!.body).toContain(party.embed_src);
    expect(mailsTo('sms@reminders.test')).toEqual([]); // not by email: send_email false
    const changed = await gql(
      `mutation { updateSubmitter(input: { id: ${party.id}, phone: "+15551230002" }) { submitter { phone } } }`,
    );
    expect(changed.body.data.updateSubmitter.submitter.phone).toBe('+15551230002');
    expect(await later(5)).toBe(0); // 6 h after the change
    expect(await later(2)).toBe(1);
    expect(await later(6)).toBe(1);
    expect(await later(50)).toBe(0);
    expect(toFirst()).toHaveLength(2);
    expect(sms.filter((m) => m.to === '+15551230002')).toHaveLength(2);
    const events = await eventsOf(party.id);
    expect(events.map((e) => [e.type, e.data.to])).toEqual([
      ['send_sms', '+15551230001'],
      ['send_reminder_sms', '+15551230001'],
      ['send_reminder_sms', '+15551230002'],
      ['send_reminder_sms', '+15551230002'],
    ]);
    expect(await t.db.smsMessage.count({ where: { submitterId: party.id, kind: 'reminder' } })).toBe(3);
  });
});

describe("the account's default", () => {
  it('applies to submissions without their own (set over GraphQL); {max_count: 0} of a submission wins', async () => {
    const bob = await t.createAccount({ name: 'Bob Ltd', email: 'bob@reminders.test' });
    const template = await api(
      'POST',
      '/templates/pdf',
      {
        name: 'Bob NDA',
        documents: [{ name: 'nda', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
        fields: [
          { name: 'Sign', type: 'signature', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
        ],
      },
      bob.apiKey,
    );
    const createFor = async (body: Record<string, unknown>) => {
      const { status, json } = await api(
        'POST',
        '/submissions',
        { template_id: template.json.id, ...body },
        bob.apiKey,
      );
      expect(status).toBe(200);
      await t.jobs.waitForIdle();
      return json[0];
    };
    // Sent before the default exists: armed when it is set, counted from its request.
    const early = await createFor({ submitters: [{ role: 'Signer', email: 'early@reminders.test' }] });
    clock.advanceHours(10);
    const set = await gql(
      `mutation { updateAccountPreferences(input: { reminders: { firstAfterHours: 12, everyHours: 12, maxCount: 2 } }) {
         reminders { firstAfterHours everyHours maxCount sendEmail sendSms } } }`,
      undefined,
      bob.apiKey,
    );
    expect(set.body.data.updateAccountPreferences.reminders).toEqual({
      firstAfterHours: 12,
      everyHours: 12,
      maxCount: 2,
      sendEmail: true,
      sendSms: false,
    });
    const plain = await createFor({ submitters: [{ role: 'Signer', email: 'plain@reminders.test' }] });
    const none = await createFor({
      reminders: { max_count: 0 },
      submitters: [{ role: 'Signer', email: 'none@reminders.test' }],
    });
    const read = await gql(
      `query { a: submission(id: ${plain.submission_id}) { reminders { maxCount } }
               b: submission(id: ${none.submission_id}) { reminders { maxCount } } }`,
      undefined,
      bob.apiKey,
    );
    expect(read.body.data).toEqual({ a: { reminders: { maxCount: 2 } }, b: { reminders: { maxCount: 0 } } });

    await later(3); // early: 13 h after its request
    expect(idsTo('early@reminders.test')).toEqual([
      requestId(early.id),
      reminderId(early.id, 1, 'early@reminders.test'),
    ]);
    expect(idsTo('plain@reminders.test')).toHaveLength(1);
    await later(10); // plain: 13 h
    expect(idsTo('plain@reminders.test')).toEqual([
      requestId(plain.id),
      reminderId(plain.id, 1, 'plain@reminders.test'),
    ]);
    await later(100);
    expect(idsTo('early@reminders.test')).toHaveLength(3);
    expect(idsTo('plain@reminders.test')).toHaveLength(3);
    expect(idsTo('none@reminders.test')).toEqual([requestId(none.id)]);
  });
});

describe('refused with 422 when nonsensical', () => {
  /** A submission for PUT /submissions/{id}. */
  let existing: number;
  beforeAll(async () => {
    existing = (await create({ submitters: [{ role: 'Signer', email: 'put@reminders.test' }] }))[0].submission_id;
  });

  it.each([
    [{ max_count: 11, first_after_hours: 1, every_hours: 1 }, 'must be at most 10 in `reminders.max_count`.'],
    [{ max_count: -1 }, 'must be at least 0 in `reminders.max_count`.'],
    [{ max_count: 1, first_after_hours: 0 }, 'must be at least 1 in `reminders.first_after_hours`.'],
    [{ max_count: 1, first_after_hours: 8761 }, 'must be at most 8760 (a year) in `reminders.first_after_hours`.'],
    [{ max_count: 1, first_after_hours: 1.5 }, 'first_after_hours must be a Integer in `reminders`.'],
    [{ first_after_hours: 1 }, 'max_count is required in `reminders`.'],
    [{ max_count: 1 }, 'first_after_hours is required when max_count is over 0 in `reminders`.'],
    [{ max_count: 2, first_after_hours: 1 }, 'every_hours is required when max_count is over 1 in `reminders`.'],
    [
      { max_count: 1, first_after_hours: 1, send_email: false },
      'send_email or send_sms must be true when max_count is over 0 in `reminders`.',
    ],
    ['daily', 'reminders must be a Object'],
  ])('reminders %j → %s', async (reminders, message) => {
    const before = await t.db.submission.count();
    const { status, json } = await api('POST', '/submissions', {
      template_id: templateId,
      reminders,
      submitters: [{ role: 'Signer', email: 'refused@reminders.test' }],
    });
    expect(status).toBe(422);
    expect(json.error).toContain(message);
    expect(await t.db.submission.count()).toBe(before);
    const put = await api('PUT', `/submissions/${existing}`, { reminders });
    expect(put.status).toBe(422);
    expect(put.json.error).toContain(message);
    const stored = await t.db.submission.findUniqueOrThrow({ where: { id: existing } });
    expect((stored.preferences as Record<string, unknown>).reminders).toBeUndefined();
  });

  it('over GraphQL: VALIDATION with the same message, on create, update and the account default', async () => {
    const input = { firstAfterHours: 1, maxCount: 2 };
    const message = 'every_hours is required when max_count is over 1 in `reminders`.';
    const created = await gql(
      'mutation ($input: CreateSubmissionsInput!) { createSubmissions(input: $input) { submissionIds } }',
      { input: { templateId, reminders: input, submitters: [{ role: 'Signer', email: 'x@reminders.test' }] } },
    );
    expect(created.body.errors?.[0]).toMatchObject({ message, extensions: { code: 'VALIDATION' } });
    const account = await gql(
      'mutation ($r: ReminderSettingsInput!) { updateAccountPreferences(input: { reminders: $r }) { id } }',
      { r: input },
    );
    expect(account.body.errors?.[0]).toMatchObject({ message, extensions: { code: 'VALIDATION' } });
    expect((await t.db.account.findUniqueOrThrow({ where: { id: alice.accountId } })).preferences).toEqual({});
  });
});
