/**
 * A crash or restart at any step of the completion pipeline (issue "Signing") ends with exactly
 * one set of documents and one form.completed event per party: the service runs as a real child
 * process (dist/main.mjs) on one database and one DATA_DIR, and is killed with SIGKILL inside the
 * completion job's transaction (first party), right after its commit (its events were recorded
 * by that transaction: the outbox), and inside the last party's transaction (signing); each
 * restart picks the job up once its lock lifetime (JOBS_LOCK_LIFETIME_SECONDS, 10 s here) has passed.
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
import { freePort, startService, testServiceEnv, type ServiceProcess } from './helpers/processes.ts';
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

/** The service on the shared database and DATA_DIR; `pause` is TEST_PAUSE_COMPLETION. */
async function startSignet(pause?: string): Promise<ServiceProcess> {
  const port = await freePort();
  const service = await startService({
    ...testServiceEnv({ databaseUrl: database.url, dataDir: path.join(tmp, 'data'), port }),
    // A killed instance's jobs run again after 10 s instead of 10 minutes. Not shorter: the lock
    // is renewed by a timer, which cannot fire while PDF work holds the event loop (seconds on a
    // loaded machine), and a lock that lapses meanwhile lets the job start a second time, which
    // would end this test's intermediate checks (the end state would still hold).
    JOBS_LOCK_LIFETIME_SECONDS: '10',
    TEST_PAUSE_COMPLETION: pause,
  });
  services.push(service);
  return service;
}

async function kill(service: ServiceProcess): Promise<void> {
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGKILL');
  await exited;
}

const pausedAt = (service: ServiceProcess, point: string) =>
  waitFor(`the completion job to pause at ${point}`, async () =>
    service.output().includes(`TEST_PAUSE_COMPLETION: pausing at ${point}`),
  );

async function documentRows(
  submissionId: number,
): Promise<Array<{ submitter_id: number | null; kind: string; n: number }>> {
  const { rows } = await sql.query(
    `SELECT submitter_id, kind, count(*)::int AS n FROM completed_documents WHERE submission_id = $1 GROUP BY 1, 2 ORDER BY 2, 1`,
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

describe('completion across crashes (SIGKILL)', () => {
  it('ends with one set of documents, one audit log and one form.completed per party', {
    timeout: 240_000,
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

    // 1. Killed inside the first party's transaction (documents drawn and stored, not committed).
    let service = await startSignet('drawn:60000');
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
    await pausedAt(service, 'drawn');
    const { rows: locked } = await sql.query(`SELECT locked_at FROM agenda.jobs WHERE name = 'complete-submission'`);
    expect(locked.map((r) => r.locked_at !== null)).toEqual([true]);
    await kill(service);
    // Rolled back with the connection: nothing of the first party's set exists.
    expect(await documentRows(submissionId)).toEqual([]);
    expect(await eventRows(submissionId, parties)).toEqual({});

    // 2. Restarted: the job runs again once its lock has expired; killed right after its commit,
    //    which recorded form.completed with the documents.
    service = await startSignet('committed:60000');
    await pausedAt(service, 'committed');
    expect(await documentRows(submissionId)).toEqual([{ submitter_id: client!.id, kind: 'document', n: 1 }]);
    expect(await eventRows(submissionId, parties)).toEqual({ [`form.completed:${client!.id}`]: 1 });
    await kill(service);

    // 3. Restarted: the job runs again and draws nothing, and form.completed is still there once.
    //    Then the last party completes, and the service is killed inside that party's transaction.
    service = await startSignet('drawn:60000');
    await waitFor(
      'the form.completed event',
      async () => (await eventRows(submissionId, parties))[`form.completed:${client!.id}`] === 1,
    );
    const put = await api('PUT', `/submitters/${manager!.id}`, {
      completed: true,
      values: { 'Manager Name': 'Анна Иванова' },
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    await pausedAt(service, 'drawn');
    await kill(service);
    expect(await documentRows(submissionId)).toEqual([{ submitter_id: client!.id, kind: 'document', n: 1 }]);

    // 4. Restarted with no pause: the last party's documents, the signatures, the audit log.
    service = await startSignet();
    await waitFor(
      'the submission to be completed',
      async () => (await eventRows(submissionId, parties))[`submission.completed:${submissionId}`] === 1,
    );
    await waitFor('every completion job to finish', async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM agenda.jobs WHERE name = 'complete-submission' AND (locked_at IS NOT NULL OR last_finished_at IS NULL)`,
      );
      return rows[0].n === 0;
    });
    expect(await documentRows(submissionId)).toEqual([
      { submitter_id: null, kind: 'audit_log', n: 1 },
      { submitter_id: client!.id, kind: 'document', n: 1 },
      { submitter_id: manager!.id, kind: 'document', n: 1 },
    ]);
    expect(await eventRows(submissionId, parties)).toEqual({
      [`form.completed:${client!.id}`]: 1,
      [`form.completed:${manager!.id}`]: 1,
      [`submission.completed:${submissionId}`]: 1,
    });

    const done = (await api('GET', `/submissions/${submissionId}`)).json;
    expect(done.status).toBe('completed');
    const final = path.join(tmp, 'final.pdf');
    fs.writeFileSync(final, Buffer.from(await (await fetch(done.documents[0].url)).arrayBuffer()));
    const text = execFileSync('pdftotext', [final, '-']).toString();
    expect(text).toContain('Ελένη Παπαδοπούλου');
    expect(text).toContain('Анна Иванова');
    expect(pdfsig(final)).toContain('Signature is Valid');
    expect(pdfsig(final)).toContain('Total document signed');
    const auditLog = path.join(tmp, 'audit.pdf');
    fs.writeFileSync(auditLog, Buffer.from(await (await fetch(done.audit_log_url)).arrayBuffer()));
    expect(pdfsig(auditLog)).toContain('Signature is Valid');
    expect(await service.stop()).toBe(0);
  });
});
