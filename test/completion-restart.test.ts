/**
 * A crash at any step of the completion pipeline (issue 14 item 5; src/signing/complete-submission.ts)
 * ends with exactly one set of documents per party, one audit log, one form.completed per party,
 * one submission.completed and one completed emails' job: the service runs as a real child process
 * on one database and one DATA_DIR, started by the test-only entry test/helpers/paused-service.ts
 * (the app with completion hooks, which the service itself never sets), and is killed with SIGKILL
 * at each boundary of each step: once the step's files are in storage (before its transaction)
 * and right after its transaction (its events were recorded by it: the outbox), for the first
 * party's documents, the last party's (signed) documents and the audit log. Each restart picks
 * the job up once its lock lifetime (JOBS_LOCK_LIFETIME_SECONDS, 10 s here) has passed.
 *
 * Files stored by a step that was killed before its transaction are not left behind: the run
 * after the restart records the file the killed run stored (a name derived from the step, first
 * write wins: FileStorage.putNamed) instead of storing another, so in the end the storage directory
 * holds no file that no stored_files row references.
 *
 * Also: the job queue's lock renewal, which lets the lock lifetime be that short without a long
 * run being cancelled or run twice.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb } from '../src/db/client.ts';
import { createJobQueue, type JobQueue } from '../src/jobs/job-queue.ts';
import { rest } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { pdfsigValidPades } from './helpers/pades-verifier.ts';
import { freePort, ROOT, startService, testServiceEnv, type ServiceProcess } from './helpers/processes.ts';
import { subscribeToEveryEvent } from './helpers/webhook-receiver.ts';

let database: TestDatabase;
let sql: pg.Pool;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-completion-restart-'));
const services: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  sql = new pg.Pool({ connectionString: database.url, max: 2 });
});
afterAll(async () => {
  for (const service of services)
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
  await sql?.end();
  await database?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('lock renewal', () => {
  it('a run longer than the lock lifetime is neither cancelled nor taken by another instance', async () => {
    const logger = pino({ level: 'silent' });
    const queues: JobQueue[] = [];
    const runs: string[] = [];
    // The lifetime is short, but not so short that a busy machine delaying the renewal timer by a
    // few hundred milliseconds would look like a dead instance (renewed every third of it).
    for (const name of ['first', 'second']) {
      const queue = createJobQueue({
        connectionString: database.url,
        logger,
        processEvery: 50,
        lockLifetimeMs: 1000,
        name,
      });
      queue.define('slow', async () => {
        runs.push(name);
        await sleep(5000);
      });
      queues.push(queue);
    }
    try {
      await queues[0]!.start();
      await queues[0]!.enqueue('slow', {});
      await waitFor('the first instance to start the run', async () => runs.length > 0, 10_000);
      // The second instance starts while the first runs: five lock lifetimes pass meanwhile.
      await queues[1]!.start();
      await queues[0]!.waitForIdle({ timeoutMs: 20_000 });
      expect(runs).toEqual(['first']);
      const { rows } = await sql.query(`SELECT fail_count, last_finished_at FROM agenda.jobs WHERE name = 'slow'`);
      expect(rows).toHaveLength(1);
      expect(rows[0].fail_count ?? 0).toBe(0);
      expect(rows[0].last_finished_at).not.toBeNull();
    } finally {
      for (const queue of queues) await queue.stop();
    }
  });
});

/** Polls `check` every 100 ms until it returns a value other than undefined/false. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${services.at(-1)?.output() ?? ''}`);
    await sleep(100);
  }
}

/**
 * The service on the shared database and DATA_DIR, started by the test-only entry
 * test/helpers/paused-service.ts (the app with completion hooks); `pause` is a step boundary
 * (`<step>:<phase>`) where the completion job stops until the process is killed.
 */
async function startSignet(pause?: string): Promise<ServiceProcess> {
  const port = await freePort();
  const service = await startService(
    {
      ...testServiceEnv({ databaseUrl: database.url, dataDir: path.join(tmp, 'data'), port }),
      // A killed instance's jobs run again after 10 s instead of 10 minutes. Not shorter: the lock
      // is renewed by a timer, which cannot fire while PDF work holds the event loop (seconds on a
      // loaded machine), and a lock that lapses meanwhile lets the job start a second time, which
      // would end this test's intermediate checks (the end state would still hold).
      JOBS_LOCK_LIFETIME_SECONDS: '10',
      PAUSE_COMPLETION_AT: pause,
    },
    90_000,
    ROOT,
    ['--import', 'tsx', path.join(ROOT, 'test', 'helpers', 'paused-service.ts')],
  );
  services.push(service);
  return service;
}

async function kill(service: ServiceProcess): Promise<void> {
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGKILL');
  await exited;
}

/** Waits until the service's completion job stops at `boundary`; resolves to the boundary it reported. */
const pausedAt = async (service: ServiceProcess, boundary: string) =>
  JSON.parse(
    await waitFor(
      `the completion job to pause at ${boundary}`,
      async () => service.output().match(new RegExp(`completion paused at ${boundary} (\\{.*\\})`))?.[1],
    ),
  ) as { step: string; phase: string; submitterId?: number };

async function documentRows(
  submissionId: number,
): Promise<Array<{ submitter_id: number | null; kind: string; n: number }>> {
  const { rows } = await sql.query(
    `SELECT submitter_id, kind, count(*)::int AS n FROM completed_documents WHERE submission_id = $1
      GROUP BY 1, 2 ORDER BY 2, 1`,
    [submissionId],
  );
  return rows;
}

/**
 * dispatch-event jobs per event key for these records (every form.completed / submission.completed
 * row, keyed or not), in the job store or still in the outbox (recorded, not relayed yet).
 */
async function eventRows(submissionId: number, submitterIds: number[]): Promise<Record<string, number>> {
  const { rows } = await sql.query(
    `SELECT coalesce(key, '(no key)') AS key, count(*)::int AS n FROM (
       SELECT data->>'uniqueKey' AS key, data->'payload' AS event FROM agenda.jobs WHERE name = 'dispatch-event'
       UNION ALL
       SELECT unique_key, data FROM outbox WHERE name = 'dispatch-event') recorded
      WHERE (event->>'type' = 'form.completed' AND (event->>'recordId')::int = ANY($2))
         OR (event->>'type' = 'submission.completed' AND (event->>'recordId')::int = $1)
      GROUP BY 1`,
    [submissionId, submitterIds],
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.n]));
}

const pdfsig = (file: string) => {
  try {
    return execFileSync('pdfsig', [file]).toString();
  } catch (error) {
    return String((error as { stdout?: Buffer }).stdout ?? error);
  }
};

/** send-completed-emails jobs of the submission, in the job store or still in the outbox. */
async function emailJobs(submissionId: number): Promise<number> {
  const { rows } = await sql.query(
    `SELECT count(*)::int AS n FROM (
       SELECT data->'payload' AS data FROM agenda.jobs WHERE name = 'send-completed-emails'
       UNION ALL
       SELECT data FROM outbox WHERE name = 'send-completed-emails') recorded
      WHERE (data->>'submissionId')::int = $1`,
    [submissionId],
  );
  return rows[0].n;
}

/** Stored files of the account (rows; bytes a killed step put into storage have none). */
async function storedFileRows(accountId: number): Promise<number> {
  const { rows } = await sql.query(`SELECT count(*)::int AS n FROM stored_files WHERE account_id = $1`, [accountId]);
  return rows[0].n;
}

/** Keys of the files in the service's storage (<DATA_DIR>/files) that no stored_files row references. */
async function unreferencedFiles(): Promise<string[]> {
  const root = path.join(tmp, 'data', 'files');
  const keys = (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((key) => fs.statSync(path.join(root, key)).isFile())
    .map((key) => key.split(path.sep).join('/'));
  const { rows } = await sql.query(`SELECT storage_key FROM stored_files WHERE storage_key = ANY($1)`, [keys]);
  const referenced = new Set(rows.map((r) => r.storage_key as string));
  return keys.filter((key) => !referenced.has(key)).sort();
}

describe('completion across crashes (SIGKILL)', () => {
  it('killed at every step boundary, ends with one set of documents, one audit log, each event once', {
    timeout: 420_000,
  }, async () => {
    const db = createDb(database.url, { poolSize: 1 });
    const account = await createAccount(db, {
      name: 'Restart Ltd',
      email: 'owner@restart.test',
      firstName: 'Ada',
      lastName: 'Lovelace',
    })
      .then(async (created) => {
        await subscribeToEveryEvent(db, created.accountId); // so each event is a dispatch-event job
        return created;
      })
      .finally(() => db.$disconnect());

    // Step 1 (the first party's documents), killed once its PDFs are in storage, before its transaction.
    let service = await startSignet('documents:stored');
    const api = (method: string, p: string, body?: unknown) => rest(service.url, account.apiKey, method, p, body);
    const template = await api('POST', '/templates/pdf', {
      name: 'Restart form',
      documents: [{ name: 'form', file: base64(fixturePdf('pdfjs-form_two_pages.pdf')) }],
      fields: [
        { name: 'Client Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] },
        { name: 'Manager Name', role: 'Manager', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 2 }] },
      ],
    });
    expect(template.status, JSON.stringify(template.json)).toBe(200);
    const created = await api('POST', '/submissions', {
      template_id: template.json.id,
      send_email: false,
      submitters: [
        {
          role: 'Client',
          email: 'client@restart.test',
          completed: true,
          values: { 'Client Name': 'Ελένη Παπαδοπούλου' },
        },
        { role: 'Manager', email: 'manager@restart.test' },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const [client, manager] = created.json as Array<{ id: number; submission_id: number }>;
    const submissionId = client!.submission_id;
    const parties = [client!.id, manager!.id];
    const filesBefore = await storedFileRows(account.accountId);
    expect(await pausedAt(service, 'documents:stored')).toMatchObject({ submitterId: client!.id });
    const { rows: locked } = await sql.query(`SELECT locked_at FROM agenda.jobs WHERE name = 'complete-submission'`);
    expect(locked.map((r) => r.locked_at !== null)).toEqual([true]);
    await kill(service);
    // Nothing recorded: no rows, no events (the bytes in storage have no row).
    expect(await documentRows(submissionId)).toEqual([]);
    expect(await eventRows(submissionId, parties)).toEqual({});
    expect(await storedFileRows(account.accountId)).toBe(filesBefore);
    // The killed step's file, under its step's name.
    const { rows: slugs } = await sql.query(`SELECT slug FROM submissions WHERE id = $1`, [submissionId]);
    const clientDocument = `named/completions/${slugs[0].slug}/documents-${client!.id}-0.pdf`;
    expect(await unreferencedFiles()).toEqual([clientDocument]);

    // Restarted: the job runs again once its lock has expired, records the documents the killed
    // run stored (not another copy) and is killed right after the step's transaction, which
    // recorded form.completed with them.
    service = await startSignet('documents:committed');
    expect(await pausedAt(service, 'documents:committed')).toMatchObject({ submitterId: client!.id });
    expect(await documentRows(submissionId)).toEqual([{ submitter_id: client!.id, kind: 'document', n: 1 }]);
    expect(await eventRows(submissionId, parties)).toEqual({ [`form.completed:${client!.id}`]: 1 });
    expect(await unreferencedFiles()).toEqual([]);
    await kill(service);

    // Restarted: the job runs again and skips the first party's step (its output exists). Then
    // the last party completes; killed once its (signed) documents are in storage.
    service = await startSignet('documents:stored');
    await waitFor("the first party's job to finish", async () => (await runningCompletionJobs()) === 0);
    expect(await documentRows(submissionId)).toEqual([{ submitter_id: client!.id, kind: 'document', n: 1 }]);
    const put = await api('PUT', `/submitters/${manager!.id}`, {
      completed: true,
      values: { 'Manager Name': 'Анна Иванова' },
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(await pausedAt(service, 'documents:stored')).toMatchObject({ submitterId: manager!.id });
    await kill(service);
    expect(await documentRows(submissionId)).toEqual([{ submitter_id: client!.id, kind: 'document', n: 1 }]);
    expect(await eventRows(submissionId, parties)).toEqual({ [`form.completed:${client!.id}`]: 1 });

    // The last party's step, killed after its transaction.
    service = await startSignet('documents:committed');
    expect(await pausedAt(service, 'documents:committed')).toMatchObject({ submitterId: manager!.id });
    await kill(service);
    const partyDocuments = [
      { submitter_id: client!.id, kind: 'document', n: 1 },
      { submitter_id: manager!.id, kind: 'document', n: 1 },
    ];
    expect(await documentRows(submissionId)).toEqual(partyDocuments);
    const partyEvents = { [`form.completed:${client!.id}`]: 1, [`form.completed:${manager!.id}`]: 1 };
    expect(await eventRows(submissionId, parties)).toEqual(partyEvents);

    // Step 2 (the audit log), killed once it is in storage: nothing recorded, nothing announced.
    service = await startSignet('audit-log:stored');
    await pausedAt(service, 'audit-log:stored');
    await kill(service);
    expect(await documentRows(submissionId)).toEqual(partyDocuments);
    expect(await eventRows(submissionId, parties)).toEqual(partyEvents);
    expect(await emailJobs(submissionId)).toBe(0);
    expect(await unreferencedFiles()).toHaveLength(1);

    // The audit log's step, killed after its transaction: recorded, announced, emails' job recorded.
    service = await startSignet('audit-log:committed');
    await pausedAt(service, 'audit-log:committed');
    await kill(service);
    const allDocuments = [{ submitter_id: null, kind: 'audit_log', n: 1 }, ...partyDocuments];
    const allEvents = { ...partyEvents, [`submission.completed:${submissionId}`]: 1 };
    expect(await documentRows(submissionId)).toEqual(allDocuments);
    expect(await eventRows(submissionId, parties)).toEqual(allEvents);
    expect(await emailJobs(submissionId)).toBe(1);

    // Restarted with no pause: the jobs run again, make nothing, and the end state holds.
    service = await startSignet();
    await waitFor('every completion job to finish', async () => (await runningCompletionJobs()) === 0);
    expect(await documentRows(submissionId)).toEqual(allDocuments);
    expect(await eventRows(submissionId, parties)).toEqual(allEvents);
    expect(await emailJobs(submissionId)).toBe(1);
    // One row per made file: two party documents and the audit log; and no file without a row,
    // although two steps were killed after storing their files.
    expect(await storedFileRows(account.accountId)).toBe(filesBefore + 3);
    expect(await unreferencedFiles()).toEqual([]);

    const done = (await api('GET', `/submissions/${submissionId}`)).json;
    expect(done.status).toBe('completed');
    const final = path.join(tmp, 'final.pdf');
    fs.writeFileSync(final, Buffer.from(await (await fetch(done.documents[0].url)).arrayBuffer()));
    const text = execFileSync('pdftotext', [final, '-']).toString();
    expect(text).toContain('Ελένη Παπαδοπούλου');
    expect(text).toContain('Анна Иванова');
    expect(pdfsig(final)).toContain('Signature is Valid');
    // PAdES B-LT (issue 17): valid, and covering the whole revision it signed (the DSS follows it).
    expect(pdfsigValidPades(fs.readFileSync(final))).toBe(true);
    const auditLog = path.join(tmp, 'audit.pdf');
    fs.writeFileSync(auditLog, Buffer.from(await (await fetch(done.audit_log_url)).arrayBuffer()));
    expect(pdfsig(auditLog)).toContain('Signature is Valid');
    expect(await service.stop()).toBe(0);
  });
});

/** complete-submission jobs that are running or have not run yet. */
async function runningCompletionJobs(): Promise<number> {
  const { rows } = await sql.query(
    `SELECT count(*)::int AS n FROM agenda.jobs
      WHERE name = 'complete-submission' AND (locked_at IS NOT NULL OR last_finished_at IS NULL)`,
  );
  return rows[0].n;
}
