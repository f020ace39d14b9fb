/**
 * A reminder survives a crash, once (issue 16: "a restart neither loses nor doubles one"). The
 * service runs as a real child process (the test-only entry test/helpers/clock-service.ts: main.ts
 * startSignet with a clock read from a file the test moves forward, so reminders due in hours come
 * due at once, found by the service's own scan timer) on a real PostgreSQL, sending to a real SMTP
 * server. It is killed with SIGKILL around each of a party's three reminders and restarted on the
 * same database:
 * 1. in the middle of the send: the SMTP server has the message's DATA and holds its answer when
 *    the kill comes, so nothing was delivered; the restarted service takes the job back (its lock
 *    lifetime, JOBS_LOCK_LIFETIME_SECONDS, is 3 s here) and sends it;
 * 2. while the send waits for its retry (the SMTP server answered 451): the restarted service runs
 *    the retry;
 * 3. right after the send was recorded (its `send_reminder_email` event), before or after the job
 *    was marked done: the restarted service sends nothing more.
 * Each reminder arrives exactly once (told apart by the Message-ID its stored email keeps:
 * `reminder:<submitter>:<number>:<address>`), and none beyond max_count.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { messageIdFor } from '../src/notifications/deliver.ts';
import { rest } from './helpers/app.ts';
import { setFileClockHours } from './helpers/clock.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { freePort, ROOT, type ServiceProcess, startService, testServiceEnv } from './helpers/processes.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

const MAIL_FROM = 'Signet <no-reply@reminders-restart.test>';
const PARTY = 'ada@reminders-restart.test';

let database: TestDatabase;
let db: Db;
let smtp: TestSmtpServer;
let account: CreatedAccount;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-reminders-restart-'));
const clockFile = path.join(tmp, 'clock');
const services: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  smtp = await startSmtpServer();
  account = await createAccount(db, { name: 'Restart Ltd', email: 'owner@reminders-restart.test' });
  setFileClockHours(clockFile, 0);
});

afterAll(async () => {
  for (const service of services)
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
  await smtp?.close();
  await db?.$disconnect();
  await database?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds (checked every 50 ms), for at most `timeoutMs`. */
async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${services.at(-1)?.output() ?? ''}`);
    await sleep(50);
  }
}

/** The service on the shared database and DATA_DIR, its clock read from `clockFile`. */
async function startSignet(): Promise<ServiceProcess> {
  const port = await freePort();
  const service = await startService(
    {
      ...testServiceEnv({ databaseUrl: database.url, dataDir: path.join(tmp, 'data'), port }),
      SMTP_URL: smtp.url,
      MAIL_FROM,
      CLOCK_FILE: clockFile,
      // The scan timer runs often; a killed instance's jobs are taken back after 3 s; a failed
      // send is retried after 3 s, so a kill lands while the retry waits.
      REMINDER_SCAN_SECONDS: '0.2',
      JOBS_LOCK_LIFETIME_SECONDS: '3',
      SEND_RETRY_BASE_MS: '3000',
    },
    90_000,
    ROOT,
    ['--import', 'tsx', path.join(ROOT, 'test', 'helpers', 'clock-service.ts')],
  );
  services.push(service);
  return service;
}

async function kill(service: ServiceProcess): Promise<void> {
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGKILL');
  await exited;
}

const reminderId = (submitterId: number, number: number) =>
  messageIdFor(`reminder:${submitterId}:${number}:${PARTY}`, MAIL_FROM);
/** How many of the received messages carry this Message-ID. */
const received = (messageId: string) => smtp.messages.filter((m) => m.parsed.messageId === messageId).length;
const reminderEvents = (submitterId: number) =>
  db.submissionEvent.count({ where: { submitterId, eventType: 'send_reminder_email' } });

describe('reminders across SIGKILL and restart', () => {
  it('each reminder arrives exactly once, killed mid-send, during a retry or after the send', async () => {
    let service = await startSignet();
    const api = (method: string, route: string, body?: unknown) =>
      rest(service.url, account.apiKey, method, route, body);
    const template = await api('POST', '/templates/pdf', {
      name: 'NDA',
      documents: [{ name: 'nda', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [
        { name: 'Signature', type: 'signature', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] },
      ],
    });
    expect(template.status).toBe(200);
    const created = await api('POST', '/submissions', {
      template_id: template.json.id,
      reminders: { first_after_hours: 24, every_hours: 24, max_count: 3 },
      submitters: [{ role: 'Signer', email: PARTY }],
    });
    expect(created.status).toBe(200);
    const party = created.json[0].id as number;
    await smtp.waitForMessages(1, 30_000); // the request
    expect(received(messageIdFor(`signature_request:${party}:0`, MAIL_FROM))).toBe(1);
    // Its reminders start once the send is recorded (their clock reads the time then).
    await until(async () => (await db.reminderSchedule.count({ where: { submitterId: party } })) === 1, 'the start');

    // 1. Killed in the middle of reminder 1's send: its DATA is at the SMTP server, unanswered.
    const held = smtp.holdNext();
    setFileClockHours(clockFile, 25);
    await held;
    await kill(service);
    expect(received(reminderId(party, 1))).toBe(0);
    service = await startSignet();
    await until(() => received(reminderId(party, 1)) === 1, 'reminder 1 after the restart');

    // 2. Killed while reminder 2's send waits for its retry (the SMTP server answered 451).
    smtp.rejectNext(451);
    setFileClockHours(clockFile, 49);
    await until(
      async () =>
        (await db.submissionEvent.count({
          where: { submitterId: party, eventType: 'fail_email', data: { path: ['retrying'], equals: true } },
        })) === 1,
      'the failed first send of reminder 2',
    );
    await kill(service);
    expect(received(reminderId(party, 2))).toBe(0);
    service = await startSignet();
    await until(() => received(reminderId(party, 2)) === 1, 'reminder 2 after the restart');

    // 3. Killed as soon as reminder 3's send is recorded.
    setFileClockHours(clockFile, 73);
    await until(async () => (await reminderEvents(party)) === 3, 'reminder 3 recorded', 30_000);
    await kill(service);
    service = await startSignet();
    // Far past any reminder still to come; the restarted instance's scans and jobs have run.
    setFileClockHours(clockFile, 24 * 30);
    await until(
      async () =>
        (await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox`)[0]!.n === 0 &&
        (
          await db.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM agenda.jobs
             WHERE name = 'send-reminder' AND (locked_at IS NOT NULL OR next_run_at IS NOT NULL)`
        )[0]!.n === 0,
      'the jobs to settle after the last restart',
    );

    for (const number of [1, 2, 3]) expect(received(reminderId(party, number)), `reminder ${number}`).toBe(1);
    // The request and three reminders: nothing else arrived (the held DATA was never accepted).
    expect(smtp.messages).toHaveLength(4);
    expect(await reminderEvents(party)).toBe(3);
    const rows = await db.emailMessage.findMany({ where: { submitterId: party, kind: 'reminder' } });
    expect(rows.map((r) => [r.dedupeKey, r.status]).sort()).toEqual(
      [1, 2, 3].map((n) => [`reminder:${party}:${n}:${PARTY}`, 'sent']),
    );
    // max_count reached: the party's row waits for nothing more.
    const schedule = await db.reminderSchedule.findUniqueOrThrow({ where: { submitterId: party } });
    expect(schedule).toMatchObject({ sentCount: 3, nextAt: null });
    await service.stop();
  }, 300_000);
});
