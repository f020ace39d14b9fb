/**
 * Outbox-backed delivery (src/notifications/deliver.ts) on a real database and a real SMTP
 * server: dedupe keys, one send per row under concurrency, retries after transient failures,
 * permanent refusals, stale claims, SMS.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { AppError } from '../src/errors.ts';
import { MailDeliveryError, SmsDeliveryError, type NotificationLogger } from '../src/notifications/delivery-error.ts';
import {
  deliverEmail,
  deliverSms,
  queueAndDeliverEmail,
  queueEmail,
  queueSms,
  type QueueEmailInput,
} from '../src/notifications/deliver.ts';
import { createMailer, type Mailer } from '../src/notifications/mailer.ts';
import { buildSignatureRequestEmail } from '../src/notifications/message-templates.ts';
import type { OutgoingSms, SmsSender } from '../src/notifications/sms.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

const quiet: NotificationLogger = { debug() {}, info() {}, warn() {}, error() {} };

let database: TestDatabase;
let db: Db;
let otherDb: Db;
let smtp: TestSmtpServer;
let mailer: Mailer;
let accountId: number;
let keys = 0;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 4 });
  // A second client stands for a second service instance.
  otherDb = createDb(database.url, { poolSize: 4 });
  smtp = await startSmtpServer();
  mailer = createMailer(
    { sendgridApiKey: undefined, sendgridApiUrl: 'https://api.sendgrid.com', smtpUrl: smtp.url },
    quiet,
  );
  accountId = (await createAccount(db, { name: 'Acme Corp', email: 'owner@acme.test' })).accountId;
});

afterAll(async () => {
  await smtp?.close();
  await db?.$disconnect();
  await otherDb?.$disconnect();
  await database?.drop();
});

afterEach(() => {
  smtp.messages.length = 0;
});

function emailInput(overrides: Partial<QueueEmailInput> = {}): QueueEmailInput {
  keys += 1;
  return {
    accountId,
    kind: 'signature_request',
    dedupeKey: `test:${keys}`,
    from: 'Signet <no-reply@signet.test>',
    to: ['Ann Lee <ann@example.test>'],
    bcc: ['audit@example.test'],
    replyTo: 'owner@acme.test',
    subject: 'You are invited to sign a document',
    textBody: 'Sign here: http://localhost:3000/s/abc',
    htmlBody: '<p>Sign here</p>',
    provider: 'smtp',
    ...overrides,
  };
}

/** Waits a little so that a second, wrongly sent message would have arrived. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('queueEmail', () => {
  it('stores the row queued; the same dedupe key again returns that row and adds none', async () => {
    const input = emailInput();
    const first = await queueEmail(db, input);
    expect(first).toMatchObject({
      status: 'queued',
      attemptCount: 0,
      to: ['Ann Lee <ann@example.test>'],
      bcc: ['audit@example.test'],
      cc: [],
    });
    const again = await queueEmail(db, { ...input, subject: 'changed' });
    expect(again.id).toBe(first.id);
    expect(again.subject).toBe('You are invited to sign a document');
    expect(await db.emailMessage.count({ where: { dedupeKey: input.dedupeKey } })).toBe(1);
  });

  it('a repeated key inside a transaction does not abort it', async () => {
    const input = emailInput();
    const [a, b] = await db.$transaction(async (tx) => [await queueEmail(tx, input), await queueEmail(tx, input)]);
    expect(a.id).toBe(b.id);
  });

  it('refuses a message without recipients', async () => {
    await expect(queueEmail(db, emailInput({ to: [] }))).rejects.toBeInstanceOf(AppError);
  });
});

describe('deliverEmail', () => {
  it(
    'sends once over SMTP and records sent_at, provider_message_id and attempt_count; ' + 'again → already-sent',
    async () => {
      const row = await queueEmail(db, emailInput());
      expect(await deliverEmail({ db, mailer }, row.id)).toBe('sent');
      const [mail] = await smtp.waitForMessages(1);
      const stored = await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } });
      expect(stored).toMatchObject({ status: 'sent', attemptCount: 1, lastError: null, provider: 'smtp' });
      expect(stored.sentAt).toBeInstanceOf(Date);
      expect(stored.providerMessageId).toBe(mail.parsed.messageId);
      expect(mail.envelope.rcptTo.sort()).toEqual(['ann@example.test', 'audit@example.test']);
      expect(mail.parsed.replyTo?.text).toBe('owner@acme.test');

      expect(await deliverEmail({ db, mailer }, row.id)).toBe('already-sent');
      await settle();
      expect(smtp.messages).toHaveLength(1);
    },
  );

  it('concurrent calls on one row, from two instances, send exactly once', async () => {
    const row = await queueEmail(db, emailInput());
    const outcomes = await Promise.all([
      deliverEmail({ db, mailer }, row.id),
      deliverEmail({ db: otherDb, mailer }, row.id),
      deliverEmail({ db, mailer }, row.id),
      deliverEmail({ db: otherDb, mailer }, row.id),
    ]);
    expect(outcomes.filter((o) => o === 'sent')).toHaveLength(1);
    for (const outcome of outcomes.filter((o) => o !== 'sent'))
      expect(['in-progress', 'already-sent']).toContain(outcome);
    await smtp.waitForMessages(1);
    await settle();
    expect(smtp.messages).toHaveLength(1);
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'sent',
      attemptCount: 1,
    });
  });

  it('a transient failure rethrows and leaves the row queued; a later call sends it once', async () => {
    const row = await queueEmail(db, emailInput());
    smtp.rejectNext(451, 'Greylisted, try again later');
    const error = await deliverEmail({ db, mailer, logger: quiet }, row.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MailDeliveryError);
    expect((error as MailDeliveryError).retryable).toBe(true);
    const waiting = await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } });
    expect(waiting).toMatchObject({ status: 'queued', attemptCount: 1, sentAt: null });
    expect(waiting.lastError).toContain('Greylisted');
    expect(smtp.messages).toHaveLength(0);

    expect(await deliverEmail({ db, mailer }, row.id)).toBe('sent');
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('already-sent');
    await smtp.waitForMessages(1);
    await settle();
    expect(smtp.messages).toHaveLength(1);
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'sent',
      attemptCount: 2,
      lastError: null,
    });
  });

  it('a permanent refusal marks the row failed and it is never tried again', async () => {
    const row = await queueEmail(db, emailInput());
    smtp.rejectNext(550, 'No such user');
    expect(await deliverEmail({ db, mailer, logger: quiet }, row.id)).toBe('failed-permanently');
    const failed = await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } });
    expect(failed).toMatchObject({ status: 'failed', attemptCount: 1, sentAt: null });
    expect(failed.lastError).toContain('No such user');
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('failed-permanently');
    await settle();
    expect(smtp.messages).toHaveLength(0);
  });

  it('gives up as failed when transient failures reach maxAttempts', async () => {
    const row = await queueEmail(db, emailInput());
    smtp.rejectNext(451);
    await expect(deliverEmail({ db, mailer, maxAttempts: 2, logger: quiet }, row.id)).rejects.toBeInstanceOf(
      MailDeliveryError,
    );
    smtp.rejectNext(451);
    expect(await deliverEmail({ db, mailer, maxAttempts: 2, logger: quiet }, row.id)).toBe('failed-permanently');
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'failed',
      attemptCount: 2,
    });
  });

  it('a row left sending by a dead worker waits for its lease, then is claimed again', async () => {
    const row = await queueEmail(db, emailInput());
    await db.$executeRaw`
      UPDATE email_messages SET status = 'sending', attempt_count = 1, updated_at = now() WHERE id = ${row.id}`;
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('in-progress');
    await db.$executeRaw`UPDATE email_messages SET updated_at = now() - interval '11 minutes' WHERE id = ${row.id}`;
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('sent');
    await smtp.waitForMessages(1);
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'sent',
      attemptCount: 2,
    });
  });

  it(
    'a row its own job left sending (that run died) is claimed again at once by the job; ' + 'another claimant waits',
    async () => {
      // The first run (job-1) claimed the row, then died before the provider answered.
      const row = await queueEmail(db, emailInput());
      await db.$executeRaw`
        UPDATE email_messages SET status = 'sending', attempt_count = 1, claimed_by = 'job-1', updated_at = now()
         WHERE id = ${row.id}`;
      expect(await deliverEmail({ db, mailer, claimant: 'job-2' }, row.id)).toBe('in-progress');
      expect(smtp.messages).toHaveLength(0);
      expect(await deliverEmail({ db, mailer, claimant: 'job-1' }, row.id)).toBe('sent');
      await smtp.waitForMessages(1);
      expect(await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
        status: 'sent',
        attemptCount: 2,
        claimedBy: 'job-1',
      });
    },
  );

  it('every send of one row carries the same Message-ID, made from its dedupe key', async () => {
    const input = emailInput();
    const row = await queueEmail(db, input);
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('sent');
    // A send that reached the provider but was never marked sent (a crash): the row is sent again.
    await db.$executeRaw`UPDATE email_messages SET status = 'queued' WHERE id = ${row.id}`;
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('sent');
    await smtp.waitForMessages(2);
    const ids = smtp.messages.map((m) => m.parsed.messageId);
    expect(ids[0]).toMatch(/^<[0-9a-f]{32}@signet\.test>$/);
    expect(ids[1]).toBe(ids[0]);
    // Another row, another id.
    const other = await queueAndDeliverEmail({ db, mailer }, emailInput());
    expect(other.outcome).toBe('sent');
    await smtp.waitForMessages(3);
    expect(smtp.messages[2]!.parsed.messageId).not.toBe(ids[0]);
  });

  it('with the outbox mailer the row is marked sent and the message only logged', async () => {
    const lines: string[] = [];
    const logger: NotificationLogger = { ...quiet, info: (_obj, msg) => void lines.push(msg ?? '') };
    const outbox = createMailer(
      { sendgridApiKey: undefined, sendgridApiUrl: 'https://api.sendgrid.com', smtpUrl: undefined },
      logger,
    );
    const row = await queueEmail(db, emailInput({ provider: 'outbox' }));
    expect(await deliverEmail({ db, mailer: outbox }, row.id)).toBe('sent');
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'sent',
      provider: 'outbox',
      providerMessageId: null,
    });
    expect(lines).toHaveLength(1);
    await settle();
    expect(smtp.messages).toHaveLength(0);
  });

  it('an unknown id is NOT_FOUND', async () => {
    await expect(deliverEmail({ db, mailer }, 999_999)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('end to end: the default signature request, queued and delivered, carries the signing link', async () => {
    const link = 'http://localhost:3000/s/Zx9kQ2mB7v';
    const rendered = buildSignatureRequestEmail({
      variables: {
        account: { name: 'Acme Corp' },
        template: { id: 7, name: 'NDA' },
        submission: { id: 301 },
        submitter: { id: 41, slug: 'Zx9kQ2mB7v', email: 'ann@example.test', name: 'Ann Lee', link },
      },
    });
    const row = await queueEmail(
      db,
      emailInput({
        subject: rendered.subject,
        textBody: rendered.text,
        htmlBody: rendered.html,
        bcc: [],
        replyTo: null,
      }),
    );
    expect(await deliverEmail({ db, mailer }, row.id)).toBe('sent');
    const [mail] = await smtp.waitForMessages(1);
    expect(mail.parsed.subject).toBe('You are invited to sign a document');
    expect(mail.parsed.text).toContain('You have been invited to sign the "NDA".');
    expect(mail.parsed.text?.match(/https?:\/\/\S+/)?.[0]).toBe(link);
    expect(mail.parsed.html).toContain(`<a href="${link}">Review and Sign</a>`);
  });
});

describe('queueAndDeliverEmail', () => {
  /** The columns a caller can tell apart (ids, keys and times left out). */
  const comparable = ({
    id: _id,
    dedupeKey: _key,
    createdAt: _c,
    updatedAt: _u,
    sentAt: _s,
    providerMessageId: _p,
    ...rest
  }: Awaited<ReturnType<typeof queueEmail>>) => rest;

  it('stores and sends the row as queueEmail + deliverEmail do, once; ' + 'again → already-sent', async () => {
    const input = emailInput({ cc: ['cc@example.test'] });
    const first = await queueAndDeliverEmail({ db, mailer }, input);
    expect(first.outcome).toBe('sent');
    const [mail] = await smtp.waitForMessages(1);
    const stored = await db.emailMessage.findUniqueOrThrow({ where: { id: first.emailMessageId } });
    expect(stored).toMatchObject({
      status: 'sent',
      attemptCount: 1,
      lastError: null,
      provider: 'smtp',
      dedupeKey: input.dedupeKey,
    });
    expect(stored.providerMessageId).toBe(mail.parsed.messageId);
    expect(stored.sentAt!.getTime()).toBeGreaterThanOrEqual(stored.createdAt.getTime());
    expect(Math.abs(stored.sentAt!.getTime() - Date.now())).toBeLessThan(60_000);
    expect(mail.envelope.rcptTo.sort()).toEqual(['ann@example.test', 'audit@example.test', 'cc@example.test']);
    expect(mail.parsed.subject).toBe(input.subject);
    expect(mail.parsed.replyTo?.text).toBe('owner@acme.test');

    // The same message through the two-step path stores the same columns.
    const twoStep = await queueEmail(db, { ...input, dedupeKey: `${input.dedupeKey}:two-step` });
    expect(await deliverEmail({ db, mailer }, twoStep.id)).toBe('sent');
    await smtp.waitForMessages(2);
    expect(comparable(stored)).toEqual(
      comparable(await db.emailMessage.findUniqueOrThrow({ where: { id: twoStep.id } })),
    );

    expect(await queueAndDeliverEmail({ db, mailer }, { ...input, subject: 'changed' })).toEqual({
      outcome: 'already-sent',
      emailMessageId: first.emailMessageId,
    });
    await settle();
    expect(smtp.messages).toHaveLength(2);
  });

  it(
    'through the outbox with a submission event: one statement stores it sent, its event and sent_at; ' +
      'the same columns as through a provider',
    async () => {
      const outbox = createMailer(
        { sendgridApiKey: undefined, sendgridApiUrl: 'https://api.sendgrid.com', smtpUrl: undefined },
        quiet,
      );
      expect(outbox.name).toBe('outbox');
      const template = await db.template.create({ data: { accountId, slug: `t-${keys}`, name: 'T' } });
      const submission = await db.submission.create({
        data: { accountId, templateId: template.id, slug: `s-${keys}` },
      });
      const roleUuid = '9b2f4c1e-1111-4a2b-8c3d-000000000001';
      const submitter = await db.submitter.create({
        data: { accountId, submissionId: submission.id, roleUuid, slug: `x-${keys}`, email: 'ann@example.test' },
      });
      const input = emailInput({ submissionId: submission.id, submitterId: submitter.id, provider: 'outbox' });
      const statements: string[] = [];
      const counted = createDb(database.url, { poolSize: 1, onQuery: (sql) => statements.push(sql) });
      try {
        const first = await queueAndDeliverEmail({ db: counted, mailer: outbox }, input, {
          submissionEvent: 'send_email',
        });
        expect(first.outcome).toBe('sent');
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(statements).toHaveLength(1);
        const stored = await db.emailMessage.findUniqueOrThrow({ where: { id: first.emailMessageId } });
        expect(stored).toMatchObject({
          status: 'sent',
          attemptCount: 1,
          lastError: null,
          provider: 'outbox',
          providerMessageId: null,
          submitterId: submitter.id,
        });
        expect(stored.sentAt!.getTime()).toBe(stored.createdAt.getTime());
        const events = await db.submissionEvent.findMany({ where: { submitterId: submitter.id } });
        // Provider 'outbox': kept, nothing left the service (the audit log says so).
        expect(events.map((e) => [e.eventType, e.data])).toEqual([
          ['send_email', { email_message_id: stored.id, provider: 'outbox', attempt: 1, to: input.to[0] }],
        ]);
        expect((await db.submitter.findUniqueOrThrow({ where: { id: submitter.id } })).sentAt?.getTime()).toBe(
          stored.sentAt!.getTime(),
        );
        // What the claimed-then-marked path stores for the same message.
        const twoStep = await queueAndDeliverEmail(
          { db, mailer: { ...outbox, name: 'smtp' } },
          { ...input, dedupeKey: `${input.dedupeKey}:two-step` },
          { submissionEvent: 'send_email' },
        );
        const other = await db.emailMessage.findUniqueOrThrow({ where: { id: twoStep.emailMessageId } });
        expect(comparable(stored)).toEqual({ ...comparable(other), provider: 'outbox' });
        // Again: stored already, nothing new.
        expect(
          await queueAndDeliverEmail({ db: counted, mailer: outbox }, input, { submissionEvent: 'send_email' }),
        ).toEqual({ outcome: 'already-sent', emailMessageId: stored.id });
        expect(await db.submissionEvent.count({ where: { submitterId: submitter.id } })).toBe(2);
      } finally {
        await counted.$disconnect();
      }
    },
  );

  it('concurrent calls with one dedupe key, from two instances, store one row and send once', async () => {
    const input = emailInput();
    const results = await Promise.all(
      [db, otherDb, db, otherDb].map((client) => queueAndDeliverEmail({ db: client, mailer }, input)),
    );
    expect(new Set(results.map((r) => r.emailMessageId)).size).toBe(1);
    expect(results.filter((r) => r.outcome === 'sent')).toHaveLength(1);
    for (const r of results.filter((r) => r.outcome !== 'sent'))
      expect(['in-progress', 'already-sent']).toContain(r.outcome);
    await smtp.waitForMessages(1);
    await settle();
    expect(smtp.messages).toHaveLength(1);
    expect(await db.emailMessage.count({ where: { dedupeKey: input.dedupeKey } })).toBe(1);
  });

  it('a transient failure rethrows and leaves the row queued; the next call sends it once', async () => {
    const input = emailInput();
    smtp.rejectNext(451, 'Greylisted, try again later');
    const error = await queueAndDeliverEmail({ db, mailer, logger: quiet }, input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MailDeliveryError);
    const waiting = await db.emailMessage.findUniqueOrThrow({ where: { dedupeKey: input.dedupeKey } });
    expect(waiting).toMatchObject({ status: 'queued', attemptCount: 1, sentAt: null });
    expect(waiting.lastError).toContain('Greylisted');

    expect(await queueAndDeliverEmail({ db, mailer }, input)).toEqual({ outcome: 'sent', emailMessageId: waiting.id });
    await smtp.waitForMessages(1);
    await settle();
    expect(smtp.messages).toHaveLength(1);
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: waiting.id } })).toMatchObject({
      status: 'sent',
      attemptCount: 2,
      lastError: null,
    });
  });

  it('a permanent refusal marks the row failed and it is never tried again', async () => {
    const input = emailInput();
    smtp.rejectNext(550, 'No such user');
    const first = await queueAndDeliverEmail({ db, mailer, logger: quiet }, input);
    expect(first.outcome).toBe('failed-permanently');
    expect(await db.emailMessage.findUniqueOrThrow({ where: { id: first.emailMessageId } })).toMatchObject({
      status: 'failed',
      attemptCount: 1,
      sentAt: null,
    });
    expect((await queueAndDeliverEmail({ db, mailer }, input)).outcome).toBe('failed-permanently');
    await settle();
    expect(smtp.messages).toHaveLength(0);
  });

  it('refuses a message without recipients or dedupe key, storing nothing', async () => {
    await expect(queueAndDeliverEmail({ db, mailer }, emailInput({ to: [] }))).rejects.toBeInstanceOf(AppError);
    await expect(queueAndDeliverEmail({ db, mailer }, emailInput({ dedupeKey: '' }))).rejects.toBeInstanceOf(AppError);
  });
});

describe('queueSms / deliverSms', () => {
  /** An SmsSender that records sends and fails as told (Twilio itself is tested in notifications-providers). */
  function stubSender() {
    const sent: OutgoingSms[] = [];
    const failures: SmsDeliveryError[] = [];
    const sender: SmsSender = {
      name: 'twilio',
      async send(message) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const failure = failures.shift();
        if (failure) throw failure;
        sent.push(message);
        return { providerMessageId: `SM${sent.length}` };
      },
    };
    return { sender, sent, failures };
  }

  it('dedupes, sends once under concurrency, retries a transient failure, records the sid', async () => {
    const { sender, sent, failures } = stubSender();
    const input = {
      accountId,
      kind: 'signature_request',
      dedupeKey: 'sms:1',
      to: '+14155550100',
      body: 'Acme has invited you',
      provider: 'twilio' as const,
    };
    const row = await queueSms(db, input);
    expect((await queueSms(db, input)).id).toBe(row.id);

    failures.push(
      new SmsDeliveryError('Twilio 503: unavailable', { retryable: true, provider: 'twilio', status: 503 }),
    );
    await expect(deliverSms({ db, smsSender: sender, logger: quiet }, row.id)).rejects.toBeInstanceOf(SmsDeliveryError);
    expect(await db.smsMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'queued',
      attemptCount: 1,
    });

    const outcomes = await Promise.all([
      deliverSms({ db, smsSender: sender }, row.id),
      deliverSms({ db: otherDb, smsSender: sender }, row.id),
      deliverSms({ db, smsSender: sender }, row.id),
    ]);
    expect(outcomes.filter((o) => o === 'sent')).toHaveLength(1);
    expect(sent).toEqual([{ to: '+14155550100', from: undefined, body: 'Acme has invited you' }]);
    expect(await db.smsMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'sent',
      providerMessageId: 'SM1',
      attemptCount: 2,
      lastError: null,
    });
  });

  it('a permanent refusal (an invalid number) marks the SMS failed', async () => {
    const { sender, sent, failures } = stubSender();
    const row = await queueSms(db, {
      accountId,
      kind: 'signature_request',
      dedupeKey: 'sms:2',
      from: '+15005550006',
      to: '+1555',
      body: 'x',
      provider: 'twilio',
    });
    failures.push(
      new SmsDeliveryError('Twilio 400: invalid To', {
        retryable: false,
        provider: 'twilio',
        status: 400,
        code: '21211',
      }),
    );
    expect(await deliverSms({ db, smsSender: sender, logger: quiet }, row.id)).toBe('failed-permanently');
    expect(await deliverSms({ db, smsSender: sender }, row.id)).toBe('failed-permanently');
    expect(sent).toHaveLength(0);
    expect(await db.smsMessage.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'failed',
      lastError: 'Twilio 400: invalid To',
    });
  });
});
