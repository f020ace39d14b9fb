/**
 * src/jobs: Agenda on the test database's PostgreSQL — running, scheduling, retries, uniqueKey,
 * persistence across instances, locking between two running queues, stop() and cancel(), and
 * Agenda's table kept out of the `public` schema that prisma/schema.prisma describes.
 */
import fs from 'node:fs';
import { Writable } from 'node:stream';
import internals from '@prisma/internals';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJobQueue, type JobQueue, type JobQueueOptions } from '../src/jobs/job-queue.ts';
import { openPostgresJobStore, type JobStore } from '../src/jobs/job-store.ts';
import { outboxRows, recordJobs, type OutboxJob } from '../src/jobs/outbox.ts';
import { INSERT_OUTBOX } from '../src/db/queries/outbox.ts';
import { startTestApp } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { diffSchemas, expectedSchemaFromDmmf, readDatabaseSchema } from './helpers/schema-diff.ts';

let database: TestDatabase;
const logs: Record<string, unknown>[] = [];
const queues: JobQueue[] = [];
let sequence = 0;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop({ timeoutMs: 2000 })));
});

afterAll(async () => {
  await database?.drop();
});

const logger = pino(
  { level: 'debug' },
  new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      callback();
    },
  }),
);

/** A queue on the test database with fast polling, stopped after each test. */
function makeQueue(options: Partial<JobQueueOptions> = {}): JobQueue {
  sequence += 1;
  const queue = createJobQueue({
    connectionString: database.url,
    logger,
    processEvery: 50,
    name: `test-${sequence}`,
    ...options,
  });
  queues.push(queue);
  return queue;
}

/** A job name no other test uses (the table is shared by the whole file). */
function jobName(label: string): string {
  sequence += 1;
  return `${label}-${sequence}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('waitFor: timed out');
    await sleep(10);
  }
}

async function sql<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('job queue', () => {
  it('runs an enqueued job with its data, on its first attempt, without waiting for a scan', async () => {
    // Scans a minute apart (after the one at start): only LISTEN/NOTIFY can start the job within
    // waitForIdle's 10 s, however slow the machine.
    const queue = makeQueue({ processEvery: 60_000 });
    const name = jobName('echo');
    const runs: { data: unknown; attempt: number; id: string }[] = [];
    queue.define<{ to: string; n: number }>(name, async (data, job) => {
      runs.push({ data, ...job });
    });
    await queue.start();
    const id = await queue.enqueue(name, { to: 'ada@example.test', n: 1 });
    await queue.waitForIdle({ timeoutMs: 10_000 });
    expect(runs).toEqual([{ data: { to: 'ada@example.test', n: 1 }, attempt: 0, id }]);
  });

  it('runs a scheduled job at its time, not before', async () => {
    const queue = makeQueue();
    const name = jobName('scheduled');
    const ranAt: number[] = [];
    queue.define(name, async () => {
      ranAt.push(Date.now());
    });
    await queue.start();
    const at = new Date(Date.now() + 300);
    await queue.enqueue(name, {}, { at });
    await waitFor(() => ranAt.length > 0, 10_000);
    // Not before its time: the run's own clock says so, however long the enqueue took.
    expect(ranAt[0]).toBeGreaterThanOrEqual(at.getTime());
    // On time, not early; the bound only catches a job left for a whole scan cycle or more.
    expect(ranAt[0]! - at.getTime()).toBeLessThan(2000);
    await queue.waitForIdle();
    expect(ranAt).toHaveLength(1);
  });

  it(
    'retries a failing job after the given delays and gives up after maxAttempts, ' + 'logging the final failure',
    async () => {
      const queue = makeQueue();
      const name = jobName('flaky');
      const delays = [150, 300];
      const runs: { attempt: number; at: number }[] = [];
      queue.define(
        name,
        async (_data, job) => {
          runs.push({ attempt: job.attempt, at: Date.now() });
          throw new Error(`refused ${job.attempt}`);
        },
        { retry: { maxAttempts: 3, delayMs: (attempt) => delays[attempt]! } },
      );
      await queue.start();
      const id = await queue.enqueue(name, { id: 1 });
      await queue.waitForIdle({ withinMs: 1000, timeoutMs: 5000 });
      await sleep(300); // no fourth run
      expect(runs.map((r) => r.attempt)).toEqual([0, 1, 2]);
      const gaps = [runs[1]!.at - runs[0]!.at, runs[2]!.at - runs[1]!.at];
      expect(gaps[0]).toBeGreaterThanOrEqual(150);
      expect(gaps[0]).toBeLessThan(150 + 1500);
      expect(gaps[1]).toBeGreaterThanOrEqual(300);
      expect(gaps[1]).toBeLessThan(300 + 1500);

      const mine = logs.filter((line) => line.jobId === id);
      expect(mine.map((line) => [line.level, line.attempt])).toEqual([
        [40, 0],
        [40, 1],
        [50, 2],
      ]);
      expect(mine[2]!.msg).toContain('giving up');
      const [row] = await sql<{ fail_count: number; next_run_at: Date | null; locked_at: Date | null }>(
        'SELECT fail_count, next_run_at, locked_at FROM agenda.jobs WHERE id = $1',
        [id],
      );
      expect(row).toEqual({ fail_count: 3, next_run_at: null, locked_at: null });
    },
  );

  it('a job that fails then succeeds stops retrying; no retry policy means one run', async () => {
    const queue = makeQueue();
    const recovering = jobName('recovering');
    const once = jobName('once');
    const attempts: Record<string, number[]> = { [recovering]: [], [once]: [] };
    queue.define(
      recovering,
      async (_data, job) => {
        attempts[recovering]!.push(job.attempt);
        if (job.attempt < 1) throw new Error('not yet');
      },
      { retry: { maxAttempts: 5, delayMs: () => 50 } },
    );
    queue.define(once, async (_data, job) => {
      attempts[once]!.push(job.attempt);
      throw new Error('no');
    });
    await queue.start();
    await queue.enqueue(recovering, null);
    await queue.enqueue(once, null);
    await queue.waitForIdle({ withinMs: 500 });
    await sleep(200);
    expect(attempts).toEqual({ [recovering]: [0, 1], [once]: [0] });
  });

  it('uniqueKey makes enqueueing idempotent, also when enqueues race', async () => {
    const queue = makeQueue();
    const name = jobName('unique');
    const runs: unknown[] = [];
    queue.define(name, async (data) => {
      runs.push(data);
    });
    // Not started: the jobs wait, so every enqueue below meets the first one's row.
    const first = await queue.enqueue(name, { n: 1 }, { uniqueKey: 'submitter:1:email' });
    const again = await queue.enqueue(name, { n: 2 }, { uniqueKey: 'submitter:1:email' });
    const racing = await Promise.all(
      Array.from({ length: 8 }, (_, i) => queue.enqueue(name, { n: 10 + i }, { uniqueKey: 'submitter:2:email' })),
    );
    const other = await queue.enqueue(name, { n: 3 }, { uniqueKey: 'submitter:3:email' });
    // The same key under another job name is another job.
    const otherName = jobName('unique-other');
    queue.define(otherName, async () => undefined);
    const sameKeyOtherName = await queue.enqueue(otherName, {}, { uniqueKey: 'submitter:1:email' });

    expect(again).toBe(first);
    expect(new Set(racing).size).toBe(1);
    expect(new Set([first, racing[0], other, sameKeyOtherName]).size).toBe(4);

    await queue.start();
    await queue.waitForIdle();
    expect(runs).toHaveLength(3);
    expect(runs).toContainEqual({ n: 1 });
    expect(runs).toContainEqual({ n: 3 });
    // After the run the key still stands for the job: enqueueing it again runs nothing.
    expect(await queue.enqueue(name, { n: 4 }, { uniqueKey: 'submitter:1:email' })).toBe(first);
    await queue.waitForIdle();
    expect(runs).toHaveLength(3);
  });

  it('persists jobs: enqueued on a queue that stops before they are due, run once by another instance', async () => {
    const name = jobName('persisted');
    const runsOn: string[] = [];
    const a = makeQueue({ name: 'instance-a' });
    a.define(name, async () => {
      runsOn.push('a');
    });
    await a.start();
    const at = new Date(Date.now() + 400);
    const ids = [await a.enqueue(name, { n: 1 }, { at }), await a.enqueue(name, { n: 2 }, { at })];
    // A scan may already have locked them (they fall due within processEvery): stop releases them.
    await a.stop();
    const [locked] = await sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM agenda.jobs WHERE id = ANY($1) AND locked_at IS NOT NULL',
      [ids],
    );
    expect(locked!.n).toBe(0);

    const b = makeQueue({ name: 'instance-b' });
    b.define(name, async () => {
      runsOn.push('b');
    });
    await b.start();
    await waitFor(() => runsOn.length === 2, 10_000);
    await b.waitForIdle();
    expect(runsOn).toEqual(['b', 'b']);
  });

  it('two queues running on one database run each job exactly once', async () => {
    const name = jobName('shared');
    const runs = new Map<number, string[]>();
    const queuesHere = ['one', 'two'].map((label) => {
      const queue = makeQueue({ name: label });
      queue.define<{ n: number }>(
        name,
        async ({ n }) => {
          runs.set(n, [...(runs.get(n) ?? []), label]);
          await sleep(5);
        },
        { concurrency: 4 },
      );
      return queue;
    });
    await Promise.all(queuesHere.map((queue) => queue.start()));
    const count = 60;
    // Enqueued through both queues, some due now and some a little later (found by the scans).
    await Promise.all(
      Array.from({ length: count }, (_, n) =>
        queuesHere[n % 2]!.enqueue(name, { n }, n % 3 === 0 ? { at: new Date(Date.now() + 100 + n) } : {}),
      ),
    );
    await waitFor(() => runs.size === count, 15_000);
    await queuesHere[0]!.waitForIdle({ timeoutMs: 15_000 });
    expect([...runs.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: count }, (_, n) => n));
    expect([...runs.values()].filter((ranOn) => ranOn.length !== 1)).toEqual([]);
  });

  it('stop() waits for a running job to finish', async () => {
    const queue = makeQueue();
    const name = jobName('slow');
    const events: string[] = [];
    queue.define(name, async () => {
      events.push('started');
      await sleep(400);
      events.push('finished');
    });
    await queue.start();
    const id = await queue.enqueue(name, {});
    await waitFor(() => events.includes('started'));
    const stopping = queue.stop({ timeoutMs: 5000 }).then(() => events.push('stopped'));
    await stopping;
    expect(events).toEqual(['started', 'finished', 'stopped']);
    const [row] = await sql<{ locked_at: Date | null; next_run_at: Date | null; last_finished_at: Date | null }>(
      'SELECT locked_at, next_run_at, last_finished_at FROM agenda.jobs WHERE id = $1',
      [id],
    );
    expect(row!.locked_at).toBeNull();
    expect(row!.next_run_at).toBeNull();
    expect(row!.last_finished_at).not.toBeNull();
  });

  it('stop() past its timeout releases the running job, and another instance runs it again', async () => {
    const name = jobName('stuck');
    const runs: { on: string; attempt: number }[] = [];
    // The run on `a` ends only when the test lets it: stop() can return only by giving up on it.
    let letRunEnd!: () => void;
    const runEnds = new Promise<void>((resolve) => (letRunEnd = resolve));
    const a = makeQueue({ name: 'stuck-a' });
    a.define(name, async (_data, job) => {
      runs.push({ on: 'a', attempt: job.attempt });
      await runEnds;
    });
    await a.start();
    await a.enqueue(name, {});
    await waitFor(() => runs.length === 1);
    try {
      await a.stop({ timeoutMs: 200 });
      expect(logs.some((line) => String(line.msg).includes('still running at stop'))).toBe(true);

      const b = makeQueue({ name: 'stuck-b' });
      b.define(name, async (_data, job) => {
        runs.push({ on: 'b', attempt: job.attempt });
      });
      await b.start();
      await waitFor(() => runs.length === 2, 10_000);
      await b.waitForIdle();
      expect(runs).toEqual([
        { on: 'a', attempt: 0 },
        { on: 'b', attempt: 0 },
      ]);
    } finally {
      letRunEnd();
    }
  });

  it('cancel() removes the pending jobs whose data matches', async () => {
    const queue = makeQueue();
    const name = jobName('expire');
    const ran: unknown[] = [];
    queue.define(name, async (data) => {
      ran.push(data);
    });
    await queue.start();
    // The cancelled job falls due long after the test: a scan cannot have taken it (a job due
    // within processEvery is locked ahead, and then runs) however long the enqueues take.
    const cancelled = await queue.enqueue(
      name,
      { submissionId: 7, reason: 'expire_at' },
      { at: new Date(Date.now() + 60_000), uniqueKey: 'submission:7:expire' },
    );
    await queue.enqueue(name, { submissionId: 8, reason: 'expire_at' }, { at: new Date(Date.now() + 300) });
    expect(await queue.cancel(name, { submissionId: 7 })).toBe(1);
    expect(await queue.cancel(name, { submissionId: 99 })).toBe(0);
    const [left] = await sql<{ n: number }>('SELECT count(*)::int AS n FROM agenda.jobs WHERE id = $1', [cancelled]);
    expect(left!.n).toBe(0);
    await waitFor(() => ran.length > 0, 10_000);
    await queue.waitForIdle();
    expect(ran).toEqual([{ submissionId: 8, reason: 'expire_at' }]);
    // The key is free again.
    await queue.enqueue(name, { submissionId: 7, reason: 'again' }, { uniqueKey: 'submission:7:expire' });
    await queue.waitForIdle();
    expect(ran).toContainEqual({ submissionId: 7, reason: 'again' });
  });

  it('waitForIdle() fails after its timeout when due jobs are not run', async () => {
    const queue = makeQueue();
    const name = jobName('nobody-runs');
    queue.define(name, async () => undefined);
    const orphan = jobName('defined-nowhere');
    await queue.enqueue(name, {}); // never started
    await queue.enqueue(orphan, {});
    await queue.enqueue(orphan, {});
    const error = await queue.waitForIdle({ timeoutMs: 200 }).catch((e: Error) => e);
    expect(String(error)).toMatch(/^Error: waitForIdle: jobs still running or due after 200 ms: /);
    expect(String(error)).toContain(`${name} ×1`);
    expect(String(error)).toContain(`${orphan} ×2 (not defined on this queue)`);
    // The table is shared by this file's tests.
    expect((await queue.cancel(name, {})) + (await queue.cancel(orphan, {}))).toBe(3);
    await queue.waitForIdle({ timeoutMs: 200 });
  });

  it('start() rejects when PostgreSQL is unreachable; a later start() tries again', async () => {
    const queue = makeQueue({ connectionString: 'postgresql://postgres@127.0.0.1:1/nowhere' });
    await expect(queue.start()).rejects.toThrow(/ECONNREFUSED/);
    await expect(queue.start()).rejects.toThrow(/ECONNREFUSED/);
    await queue.stop();
  });

  it('keeps Agenda in the `agenda` schema: `public` still matches prisma/schema.prisma', async () => {
    await makeQueue().start();
    const tables = await sql<{ schema: string; table: string }>(
      `SELECT table_schema AS schema, table_name AS table FROM information_schema.tables
        WHERE table_name ILIKE '%job%' OR table_schema = 'agenda' ORDER BY 1, 2`,
    );
    expect(tables).toEqual([{ schema: 'agenda', table: 'jobs' }]);

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const actual = await readDatabaseSchema(client);
      const schemaText = fs.readFileSync(new URL('../prisma/schema.prisma', import.meta.url), 'utf8');
      const expected = expectedSchemaFromDmmf(await internals.getDMMF({ datamodel: schemaText }));
      expect(diffSchemas(expected, actual)).toEqual([]);
    } finally {
      await client.end();
    }
  });
});

describe('the app and its job queue', () => {
  it('startTestApp starts the app with its queue running; close() stops it', async () => {
    const t = await startTestApp();
    try {
      expect(t.app.jobs).toBe(t.jobs);
      const ran: unknown[] = [];
      t.jobs.define('test.echo', async (data) => {
        ran.push(data);
      });
      await t.jobs.enqueue('test.echo', { hello: 'world' });
      await t.jobs.waitForIdle();
      expect(ran).toEqual([{ hello: 'world' }]);
    } finally {
      await t.close();
    }
  });
});

describe('the PostgreSQL job store in few statements (src/jobs/job-store.ts)', () => {
  /** A store of its own on the test database, closed after the test. */
  async function openStore() {
    const store = await openPostgresJobStore({ connectionString: database.url, logger });
    stores.push(store);
    return store;
  }
  const stores: JobStore[] = [];
  /** Names of jobs locked here by hand: removed after the test, so that no waitForIdle() waits for them. */
  const handLocked: string[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    await sql('DELETE FROM agenda.jobs WHERE name = ANY($1)', [handLocked.splice(0)]);
  });
  const due = (name: string, n: number, key?: string) => ({
    name,
    data: { payload: { n }, ...(key ? { uniqueKey: key } : {}) },
    nextRunAt: new Date(Date.now() - 1000),
  });
  const lockedIds = async (name: string) =>
    (
      await sql<{ id: string }>(
        'SELECT id::text AS id FROM agenda.jobs WHERE name = $1 AND locked_at IS NOT NULL ORDER BY id',
        [name],
      )
    )
      .map((r) => r.id)
      .sort();
  const ask = (store: JobStore, name: string) =>
    store.repository.getNextJobToRun(name, new Date(Date.now() + 1000), new Date(Date.now() - 600_000), undefined, {
      lastModifiedBy: 'test',
    });

  it('enqueues made together are stored with their keys and announced on Agenda’s channel, once each', async () => {
    const queue = makeQueue();
    const name = jobName('together');
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const heard: { channel: string; payload: Record<string, unknown> }[] = [];
    listener.on('notification', (m) => {
      const payload = JSON.parse(m.payload ?? '{}') as Record<string, unknown>;
      if (payload.jobName === name) heard.push({ channel: m.channel, payload });
    });
    await listener.query('LISTEN "agenda:jobs"');
    await listener.query('LISTEN "agenda:jobs:state"');
    try {
      const runs: unknown[] = [];
      queue.define<{ n: number }>(name, async (data) => {
        runs.push(data.n);
      });
      await queue.start();
      const ids = await Promise.all([
        queue.enqueue(name, { n: 1 }, { uniqueKey: 'a' }),
        queue.enqueue(name, { n: 2 }),
        queue.enqueue(name, { n: 3 }, { uniqueKey: 'a' }),
      ]);
      expect(ids[2]).toBe(ids[0]);
      expect(ids[1]).not.toBe(ids[0]);
      await queue.waitForIdle();
      await sleep(100);
      expect(runs.sort()).toEqual([1, 2]);
      const rows = await sql<{
        id: string;
        data: unknown;
        last_finished_at: Date | null;
        locked_at: Date | null;
        next_run_at: Date | null;
      }>(
        'SELECT id::text AS id, data, last_finished_at, locked_at, next_run_at FROM agenda.jobs WHERE name = $1 ' +
          "ORDER BY data->'payload'->>'n'",
        [name],
      );
      expect(rows.map((r) => [r.id, r.data])).toEqual([
        [ids[0], { payload: { n: 1 }, uniqueKey: 'a' }],
        [ids[1], { payload: { n: 2 } }],
      ]);
      // The end of each run was saved: finished, unlocked, nothing further to run.
      for (const row of rows)
        expect(row).toMatchObject({ locked_at: null, next_run_at: null, last_finished_at: expect.any(Date) });
      // One announcement for the name (none for the key already stored); no state notifications.
      expect(heard).toHaveLength(1);
      expect(heard[0]!.channel).toBe('agenda:jobs');
      expect([ids[0], ids[1]]).toContain(heard[0]!.payload.jobId);
      expect(heard[0]!.payload).toMatchObject({
        jobName: name,
        priority: 0,
        source: expect.any(String),
        nextRunAt: expect.any(String),
        timestamp: expect.any(String),
      });
    } finally {
      await listener.end();
    }
  });

  it(
    'locks the due jobs of a name in one statement and hands them to Agenda one by one, ' +
      'then “none” in the same fill',
    async () => {
      const store = await openStore();
      const name = jobName('ahead');
      handLocked.push(name);
      const ids = await store.insertJobs!([due(name, 1), due(name, 2), due(name, 3)], 'test');
      // One fill: Agenda asks again as soon as it has a job, until none.
      const handed = [await ask(store, name), await ask(store, name), await ask(store, name), await ask(store, name)];
      expect(handed[3]).toBeUndefined();
      expect(
        handed
          .slice(0, 3)
          .map((j) => String(j!._id))
          .sort(),
      ).toEqual([...ids].sort());
      expect(await lockedIds(name)).toEqual([...ids].sort());
      // A later fill asks the database again and finds the job stored since.
      const [later] = await store.insertJobs!([due(name, 4)], 'test');
      expect(String((await ask(store, name))?._id)).toBe(later);
      expect(await ask(store, name)).toBeUndefined();
    },
  );

  it('with a backlog beyond the lock limit, finished jobs make room: every job runs once, with no scan', async () => {
    const name = jobName('backlog');
    const store = await openStore();
    await store.insertJobs!(
      Array.from({ length: 60 }, (_, n) => due(name, n)),
      'test',
    );
    // Scans a minute apart: only the scan at start, then refills as jobs finish, can lock them.
    const queue = makeQueue({ processEvery: 60_000 });
    const runs: number[] = [];
    let running = 0;
    let most = 0;
    queue.define<{ n: number }>(
      name,
      async (data) => {
        running += 1;
        most = Math.max(most, running);
        await sleep(5);
        runs.push(data.n);
        running -= 1;
      },
      { concurrency: 2 },
    );
    await queue.start();
    await waitFor(() => runs.length === 60, 20_000);
    await queue.waitForIdle();
    expect([...runs].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, n) => n));
    expect(most).toBeLessThanOrEqual(2);
  });

  it('releaseLockedAhead() unlocks the jobs locked ahead and not handed over', async () => {
    const store = await openStore();
    const name = jobName('release');
    handLocked.push(name);
    await store.insertJobs!([due(name, 1), due(name, 2), due(name, 3)], 'test');
    const first = await ask(store, name);
    expect(await lockedIds(name)).toHaveLength(3);
    await store.releaseLockedAhead();
    expect(await lockedIds(name)).toEqual([String(first!._id)]);
  });

  it('end-of-run saves made together are written together; a missing job fails its own save only', async () => {
    const store = await openStore();
    const name = jobName('saves');
    handLocked.push(name);
    await store.insertJobs!([due(name, 1), due(name, 2)], 'test');
    const a = (await ask(store, name))!;
    const b = (await ask(store, name))!;
    expect(await ask(store, name)).toBeUndefined();
    await sql('DELETE FROM agenda.jobs WHERE id = $1', [String(b._id)]);
    const finished = new Date();
    const [savedA, savedB] = await Promise.allSettled([
      store.repository.saveJobState(
        { ...a, lockedAt: undefined, nextRunAt: null, lastRunAt: finished, lastFinishedAt: finished },
        { lastModifiedBy: 'test' },
      ),
      store.repository.saveJobState(
        { ...b, lockedAt: undefined, nextRunAt: null, lastRunAt: finished, lastFinishedAt: finished },
        { lastModifiedBy: 'test' },
      ),
    ]);
    expect(savedA.status).toBe('fulfilled');
    expect(savedB.status).toBe('rejected');
    const [row] = await sql<{
      locked_at: Date | null;
      next_run_at: Date | null;
      last_finished_at: Date;
      last_modified_by: string;
    }>('SELECT locked_at, next_run_at, last_finished_at, last_modified_by FROM agenda.jobs WHERE id = $1', [
      String(a._id),
    ]);
    expect(row).toEqual({ locked_at: null, next_run_at: null, last_finished_at: finished, last_modified_by: 'test' });
    // The start-of-run save (a lock held) writes nothing: the lock taken by the ask stands.
    await store.insertJobs!([due(name, 3)], 'test');
    const c = (await ask(store, name))!;
    await store.repository.saveJobState({ ...c, lastRunAt: new Date(), nextRunAt: null }, { lastModifiedBy: 'test' });
    const [started] = await sql<{ next_run_at: Date | null; last_run_at: Date | null }>(
      'SELECT next_run_at, last_run_at FROM agenda.jobs WHERE id = $1',
      [String(c._id)],
    );
    expect(started).toEqual({ next_run_at: c.nextRunAt, last_run_at: null });
  });
});

describe('concurrencyPer: a fair claim (issue 23)', () => {
  it('holds at most max per value over two instances; other values and keyless jobs start at once', async () => {
    const name = jobName('fair');
    const running = new Map<string, number>();
    const peaks = new Map<string, number>();
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handler = async (data: { group?: string; n: number }) => {
      const group = data.group ?? 'none';
      running.set(group, (running.get(group) ?? 0) + 1);
      peaks.set(group, Math.max(peaks.get(group) ?? 0, running.get(group)!));
      started.push(`${group}:${data.n}`);
      await gate;
      running.set(group, running.get(group)! - 1);
    };
    // Two instances, each with 10 places of its own: a limit counted per instance would let each run 2.
    const [one, two] = [makeQueue(), makeQueue()];
    for (const queue of [one, two]) {
      queue.define(name, handler, { concurrency: 10, concurrencyPer: [{ key: 'group', max: 2 }] });
      await queue.start();
    }
    await Promise.all(Array.from({ length: 6 }, (_, n) => one.enqueue(name, { group: 'a', n })));
    await waitFor(() => (running.get('a') ?? 0) === 2);
    await Promise.all([two.enqueue(name, { group: 'b', n: 0 }), two.enqueue(name, { n: 0 })]);
    await waitFor(() => started.includes('b:0') && started.includes('none:0'), 2000);
    await sleep(300);
    expect(peaks.get('a')).toBe(2);
    expect(started.filter((s) => s.startsWith('a:'))).toHaveLength(2);
    // The four of `a` waiting hold no lock: they are due, unlocked.
    const waiting = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM agenda.jobs WHERE name = $1 AND locked_at IS NULL AND next_run_at <= now()`,
      [name],
    );
    expect(waiting[0]!.n).toBe(4);
    release();
    await one.waitForIdle({ timeoutMs: 10_000 });
    expect(started.filter((s) => s.startsWith('a:')).sort()).toEqual(['a:0', 'a:1', 'a:2', 'a:3', 'a:4', 'a:5']);
    expect(peaks.get('a')).toBe(2);
  });
});

describe('the outbox (jobs recorded in a transaction)', () => {
  /** Writes outbox rows as a change's transaction does, and commits or rolls back. */
  async function record(jobs: OutboxJob[], commit = true): Promise<void> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(INSERT_OUTBOX.text, [JSON.stringify(outboxRows(jobs))]);
      await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    } finally {
      await client.end();
    }
  }
  const outboxCount = async () => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM outbox'))[0]!.n;

  it(
    'runs what a committed transaction recorded, once, even when nobody relayed it ' + '(a crash after the commit)',
    async () => {
      const name = jobName('outbox');
      const runs: unknown[] = [];
      // Recorded with no queue running: the commit happened, its relayOutbox() never did.
      await record([
        { name, data: { n: 1 }, uniqueKey: 'one' },
        { name, data: { n: 1 }, uniqueKey: 'one' },
        { name, data: { n: 2 } },
      ]);
      await record([{ name, data: { n: 3 } }], false);
      expect(await outboxCount()).toBe(3);
      const queue = makeQueue();
      queue.define(name, async (data) => {
        runs.push(data);
      });
      await queue.start(); // its first scan moves the rows
      await queue.waitForIdle();
      expect(runs.map((r) => (r as { n: number }).n).sort()).toEqual([1, 2]);
      expect(await outboxCount()).toBe(0);
      const [{ n }] = await sql<{ n: number }>('SELECT count(*)::int AS n FROM agenda.jobs WHERE name = $1', [name]);
      expect(n).toBe(2);
    },
  );

  it('moves each row once when instances relay at the same time, and announces them (no scan needed)', async () => {
    const name = jobName('outbox-race');
    const runs: number[] = [];
    // Scans far apart: only the relay's NOTIFY can start the jobs within the test.
    const [a, b] = [makeQueue({ processEvery: 60_000 }), makeQueue({ processEvery: 60_000 })];
    for (const queue of [a, b]) queue.define<{ n: number }>(name, async ({ n }) => void runs.push(n));
    await Promise.all([a.start(), b.start()]);
    await record(Array.from({ length: 1200 }, (_, n) => ({ name, data: { n } })));
    for (let i = 0; i < 5; i += 1) {
      a.relayOutbox();
      b.relayOutbox();
    }
    await waitFor(() => runs.length >= 1200, 20_000);
    await sleep(200);
    expect(runs).toHaveLength(1200);
    expect(new Set(runs).size).toBe(1200);
    expect(await outboxCount()).toBe(0);
  });

  it('keeps a webhook dispatch only when an endpoint of the account subscribes to the event', async () => {
    const t = await startTestApp();
    try {
      const { accountId } = await t.createAccount();
      await t.db.webhookEndpoint.create({
        data: { accountId, url: 'https://hooks.example.test/x', events: ['form.viewed'], secret: 's' },
      });
      // Through the service's own function, on the app's database (where the endpoint is).
      await recordJobs(t.db, [
        { name: 'dispatch-probe', data: { type: 'form.viewed' }, ifWebhook: { accountId, eventType: 'form.viewed' } },
        { name: 'dispatch-probe', data: { type: 'form.started' }, ifWebhook: { accountId, eventType: 'form.started' } },
        {
          name: 'dispatch-probe',
          data: { type: 'form.viewed' },
          ifWebhook: { accountId: accountId + 1000, eventType: 'form.viewed' },
        },
        { name: 'dispatch-probe', data: { type: 'no condition' } },
      ]);
      const kept = await t.db.$queryRaw<
        { data: { type: string } }[]
      >`SELECT data FROM outbox WHERE name = 'dispatch-probe'
        UNION ALL SELECT data->'payload' FROM agenda.jobs WHERE name = 'dispatch-probe'`;
      expect(kept.map((r) => r.data.type).sort()).toEqual(['form.viewed', 'no condition']);
    } finally {
      await t.close();
    }
  });
});
