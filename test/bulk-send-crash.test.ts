/**
 * A bulk send survives SIGKILL (issue 16: "a crash mid-way neither loses nor doubles a row"): the
 * service runs as a real child process (dist/main.mjs) on a real PostgreSQL with a real SMTP server;
 * a bulk send of 700 rows is started and the service is killed with SIGKILL three times while its
 * batches run, and restarted on the same database each time. Then:
 * - the bulk send completes: every row is created or rejected, once (created + rejected = rows);
 * - each created row has exactly one submission, the one its row names, with the row's submitter
 *   (external_id row-<n>); there is no other submission of the template (none made twice, none
 *   orphaned by a batch cut off before its commit);
 * - the rejected rows are exactly the bad ones, with POST /submissions' message;
 * - each created row's invitation is one stored email and arrived (by Message-ID); a message
 *   arrives twice only when its send was interrupted by a kill (the same message again).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { messageIdFor } from '../src/notifications/deliver.ts';
import { rest } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { freePort, startService, testServiceEnv, type ServiceProcess } from './helpers/processes.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

const MAIL_FROM = 'Signet <no-reply@bulk-crash.test>';
const ROWS = 700;
/** Every 37th row has an address POST /submissions refuses. */
const isBad = (row: number) => row % 37 === 0;
/**
 * Kills once this many rows are done: right after the first, second and third batches (200 rows
 * each, BULK_SEND_BATCH_ROWS) have committed, while the next one runs; each needs progress after
 * the restart before it.
 */
const KILL_AT = [1, 201, 401];

let database: TestDatabase;
let db: Db;
let smtp: TestSmtpServer;
let account: CreatedAccount;
let port: number;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-bulk-crash-'));
const services: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  smtp = await startSmtpServer();
  account = await createAccount(db, {
    name: 'Bulk Crash Ltd',
    email: 'owner@bulk-crash.test',
    firstName: 'Ada',
    lastName: 'Lovelace',
  });
  port = await freePort();
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

async function startSignet(): Promise<ServiceProcess> {
  const service = await startService({
    ...testServiceEnv({ databaseUrl: database.url, dataDir: path.join(tmp, 'data'), port }),
    SECRET_KEY_BASE: 'bulk-crash-test-secret-key-base-0123456789',
    SMTP_URL: smtp.url,
    MAIL_FROM,
    SEND_RETRY_BASE_MS: '1000',
    // A batch the killed process had locked is taken back after this (default 30 s).
    JOBS_LOCK_LIFETIME_SECONDS: '3',
  });
  services.push(service);
  return service;
}

async function kill(service: ServiceProcess): Promise<void> {
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGKILL');
  await exited;
}

describe('a bulk send killed with SIGKILL while its batches run', () => {
  it('completes after restarts with each row made once or rejected once, and each invitation sent', {
    timeout: 300_000,
  }, async () => {
    let service = await startSignet();
    const api = (method: string, p: string, body?: unknown) =>
      rest(`http://127.0.0.1:${port}`, account.apiKey, method, p, body);
    const template = await api('POST', '/templates/pdf', {
      name: 'Bulk crash form',
      documents: [{ name: 'form', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      fields: [{ name: 'Full Name', role: 'Signer', areas: [{ x: 72, y: 72, w: 220, h: 24, page: 1 }] }],
    });
    expect(template.status, JSON.stringify(template.json)).toBe(200);
    const templateId = template.json.id as number;

    const lines = ['Email,Name,external_id,Full Name'];
    for (let row = 1; row <= ROWS; row += 1)
      lines.push(`${isBad(row) ? `bad-${row}@` : `row-${row}@bulk-crash.test`},Person ${row},row-${row},P ${row}`);
    const started = await api('POST', `/templates/${templateId}/submissions/bulk`, {
      csv: lines.join('\n'),
      rate_per_minute: 60_000,
    });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    const id = started.json.id as number;

    const processed = async () =>
      (await db.bulkSend.findUniqueOrThrow({ where: { id } })) as { createdCount: number; rejectedCount: number };
    const killedAt: number[] = [];
    for (const at of KILL_AT) {
      for (;;) {
        const { createdCount, rejectedCount } = await processed();
        if (createdCount + rejectedCount >= at) break;
        await sleep(20);
      }
      await kill(service);
      const { createdCount, rejectedCount } = await processed();
      killedAt.push(createdCount + rejectedCount);
      service = await startSignet();
    }
    expect(
      killedAt.every((n) => n < ROWS),
      `killed while rows were left: ${killedAt}`,
    ).toBe(true);
    const restartedAt = Date.now();

    // Completes after the last restart.
    const deadline = Date.now() + 120_000;
    let report: any;
    for (;;) {
      report = (await api('GET', `/submissions/bulk/${id}`)).json;
      if (report.status === 'completed') break;
      if (Date.now() > deadline) throw new Error(`not completed: ${JSON.stringify(report)}\n${service.output()}`);
      await sleep(200);
    }
    const completedMs = Date.now() - restartedAt;
    const bad = Array.from({ length: ROWS }, (_, i) => i + 1).filter(isBad);
    expect(report).toMatchObject({
      total_rows: ROWS,
      processed_rows: ROWS,
      created_count: ROWS - bad.length,
      rejected_count: bad.length,
    });
    expect(report.rejected_rows).toEqual(bad.map((row) => ({ row, error: 'email is invalid in `submitters[0]`.' })));

    // Each created row: one submission, its own; no other submission of the template.
    const rows = await db.bulkSendRow.findMany({ where: { bulkSendId: id }, orderBy: { row: 'asc' } });
    expect(rows.filter((r) => r.status === 'pending')).toEqual([]);
    const created = rows.filter((r) => r.status === 'created');
    expect(created.map((r) => r.row)).toEqual(
      Array.from({ length: ROWS }, (_, i) => i + 1).filter((row) => !isBad(row)),
    );
    const submissions = await db.submission.findMany({
      where: { templateId },
      select: { id: true, source: true, submitters: { select: { id: true, externalId: true, email: true } } },
    });
    expect(submissions).toHaveLength(created.length);
    const byId = new Map(submissions.map((s) => [s.id, s]));
    const wrong = created.filter((r) => {
      const submission = byId.get(r.submissionId!);
      return submission?.submitters.length !== 1 || submission.submitters[0]!.externalId !== `row-${r.row}`;
    });
    expect(wrong.map((r) => r.row)).toEqual([]);
    expect(new Set(submissions.map((s) => s.source))).toEqual(new Set(['bulk']));

    // Each invitation: one stored email, and it arrived.
    const expected = new Map(
      submissions.map((s) => [
        messageIdFor(`signature_request:${s.submitters[0]!.id}:0`, MAIL_FROM),
        s.submitters[0]!.email,
      ]),
    );
    const arrived = () => {
      const counts = new Map<string, number>();
      for (const message of smtp.messages) {
        const messageId = message.parsed.messageId ?? '(none)';
        counts.set(messageId, (counts.get(messageId) ?? 0) + 1);
      }
      return counts;
    };
    const sendDeadline = Date.now() + 120_000;
    while ([...expected.keys()].some((messageId) => !arrived().has(messageId))) {
      if (Date.now() > sendDeadline) {
        const missing = [...expected].filter(([messageId]) => !arrived().has(messageId)).map(([, email]) => email);
        throw new Error(`${missing.length} invitations did not arrive: ${missing.slice(0, 5).join(', ')}`);
      }
      await sleep(250);
    }
    const deliveredMs = Date.now() - restartedAt;
    await sleep(2000);
    const [{ emailRows }] = await db.$queryRaw<{ emailRows: number }[]>`
      SELECT count(*)::int AS "emailRows" FROM email_messages WHERE kind = 'signature_request'`;
    expect(emailRows).toBe(expected.size);
    const got = arrived();
    expect([...got.keys()].filter((messageId) => !expected.has(messageId))).toEqual([]);
    const interrupted = new Set(
      (await db.$queryRaw<{ dedupe_key: string }[]>`SELECT dedupe_key FROM email_messages WHERE attempt_count > 1`).map(
        (r) => messageIdFor(r.dedupe_key, MAIL_FROM),
      ),
    );
    const twice = [...got].filter(([, n]) => n > 1).map(([messageId]) => messageId);
    expect(
      twice.filter((messageId) => !interrupted.has(messageId)),
      'sent twice without an interrupted send',
    ).toEqual([]);
    console.info(
      `bulk-send-crash: ${ROWS} rows, killed at ${killedAt.join(', ')} rows done; ${created.length} created, ` +
        `${bad.length} rejected; completed ${completedMs} ms after the last restart, ${expected.size} invitations ` +
        `arrived by ${deliveredMs} ms (${twice.length} twice after an interrupted send)`,
    );
    await service.stop();
  });
});
