/**
 * Contract tests of src/jobs/agenda-adapter.ts: each assumption Signet's job store makes about
 * Agenda beyond its public, typed API, checked against the installed `agenda` and
 * `@agendajs/postgres-backend` packages on a real PostgreSQL. When an upgrade of either package
 * changes one of them, the test named after it fails (instead of jobs going missing at run time).
 */
import { PostgresBackend, PostgresJobRepository } from '@agendajs/postgres-backend';
import { Agenda, type AgendaBackend, type JobParameters, type JobRepositoryOptions } from 'agenda';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JOBS_COLUMNS_WRITTEN, JOBS_TABLE } from '../src/db/queries/jobs.ts';
import {
  closableChannel,
  JOBS_CHANNEL,
  newJobNotification,
  rowToJobParameters,
  runningJobsOf,
} from '../src/jobs/agenda-adapter.ts';
import { openPostgresJobStore, type JobStore } from '../src/jobs/job-store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

let database: TestDatabase;
/** Pools, stores and Agendas of a test, closed after it (last opened first). */
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

afterAll(async () => {
  await database?.drop();
});

const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('waitFor: timed out');
    await sleep(10);
  }
}

/** The job store on the test database (schema `agenda`: the backend's own DDL), closed after the test. */
async function openStore(): Promise<JobStore> {
  const store = await openPostgresJobStore({ connectionString: database.url, logger });
  cleanups.push(() => store.close());
  return store;
}

/** A pool on the jobs schema, as the store's (search_path = agenda). */
function jobsPool(max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: database.url, options: '-c search_path=agenda', max });
  pool.on('error', () => undefined);
  cleanups.push(() => pool.end());
  return pool;
}

/** A backend for `new Agenda` around `repository`, without notifications (the scan finds jobs). */
function backendOf(repository: PostgresJobRepository): AgendaBackend {
  return {
    name: 'contract',
    repository,
    notificationChannel: undefined,
    ownsConnection: false,
    connect: async () => undefined,
    disconnect: async () => undefined,
  };
}

/** An Agenda instance scanning every 20 ms, stopped after the test. */
function agendaOn(backend: AgendaBackend, name: string): Agenda {
  const agenda = new Agenda({ backend, name, processEvery: 20 });
  cleanups.push(() => agenda.stop(false));
  return agenda;
}

let sequence = 0;
const jobName = (label: string) => `${label}-${++sequence}`;

describe('Agenda internals Signet relies on (src/jobs/agenda-adapter.ts)', () => {
  it('5. the backend’s table has every column the store writes directly', async () => {
    await openStore();
    const { rows } = await jobsPool().query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'agenda' AND table_name = $1`,
      [JOBS_TABLE],
    );
    const columns = rows.map((r) => r.column_name);
    expect(columns).toEqual(expect.arrayContaining([...JOBS_COLUMNS_WRITTEN]));
  });

  it('1. rowToJob maps a row of the table as the repository’s own public reads do', async () => {
    const store = await openStore();
    const name = jobName('row');
    const [id] = await store.insertJobs!(
      [{ name, data: { payload: { n: 1 }, uniqueKey: 'k' }, nextRunAt: new Date('2030-01-02T03:04:05.678Z') }],
      'contract',
    );
    const { rows } = await jobsPool().query(`SELECT * FROM ${JOBS_TABLE} WHERE id = $1`, [id]);
    const mapped = rowToJobParameters(store.repository, rows[0]);
    expect(mapped).toEqual(await store.repository.getJobById(id!));
    expect(mapped).toMatchObject({
      name,
      data: { payload: { n: 1 }, uniqueKey: 'k' },
      nextRunAt: new Date('2030-01-02T03:04:05.678Z'),
      priority: 0,
      disabled: false,
      lastModifiedBy: 'contract',
    });
    expect(String(mapped._id)).toBe(id);
  });

  it('2. agenda.jobProcessor.runningJobs lists the Job objects running in this process', async () => {
    const store = await openStore();
    const agenda = agendaOn(store.backend, 'contract-running');
    const name = jobName('running');
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    agenda.define(name, async () => {
      started = true;
      await released;
    });
    await agenda.start();
    const id = await store.insertJob!({ name, data: { payload: null }, nextRunAt: new Date() }, 'contract');
    await waitFor(() => started);
    const running = runningJobsOf(agenda);
    expect(running().map((job) => [job.attrs.name, String(job.attrs._id)])).toEqual([[name, id]]);
    release();
    await waitFor(() => running().length === 0);
  });

  it(
    '3. a NOTIFY with newJobNotification’s payload on JOBS_CHANNEL ' +
      'is what the backend publishes and reaches its subscribers',
    async () => {
      const pool = jobsPool();
      const backend = new PostgresBackend({
        pool,
        tableName: JOBS_TABLE,
        channelName: JOBS_CHANNEL,
        ensureSchema: false,
      });
      const channel = backend.notificationChannel!;
      await backend.connect(); // hands the pool to the channel (Agenda's start() connects the channel)
      await channel.connect();
      cleanups.push(() => channel.disconnect());
      const listener = new pg.Client({ connectionString: database.url });
      await listener.connect();
      cleanups.push(() => listener.end());
      const heard: { channel: string; payload: string }[] = [];
      listener.on('notification', (m) => heard.push({ channel: m.channel, payload: m.payload ?? '' }));
      await listener.query(`LISTEN ${listener.escapeIdentifier(JOBS_CHANNEL)}`);

      // The backend's own publish: the same text as ours, on the channel named by channelName.
      const job = {
        id: '00000000-0000-4000-8000-000000000001',
        name: 'announced',
        nextRunAt: '2030-01-02T03:04:05.678Z',
        timestamp: '2026-11-25T08:00:00.000Z',
        source: 'contract',
      };
      await channel.publish({
        jobId: job.id as never,
        jobName: job.name,
        nextRunAt: new Date(job.nextRunAt),
        priority: 0,
        timestamp: new Date(job.timestamp),
        source: job.source,
      });
      await waitFor(() => heard.length === 1);
      expect(heard[0]).toEqual({ channel: JOBS_CHANNEL, payload: newJobNotification(job) });

      // Ours, sent by SQL (as the store's insert and the outbox relay do), is parsed by its subscribers.
      const received: unknown[] = [];
      channel.subscribe((notification) => {
        received.push(notification);
      });
      await pool.query('SELECT pg_notify($1, $2)', [JOBS_CHANNEL, newJobNotification(job)]);
      await waitFor(() => received.length === 1);
      expect(received[0]).toEqual({
        jobId: job.id,
        jobName: job.name,
        nextRunAt: new Date(job.nextRunAt),
        priority: 0,
        timestamp: new Date(job.timestamp),
        source: job.source,
      });
    },
  );

  it(
    '4. Agenda saves a run’s state twice: at its start with lockedAt set, at its end with lockedAt cleared; ' +
      'it asks for jobs with (name, next scan, lock deadline, now, {lastModifiedBy})',
    async () => {
      const saves: { lockedAt: unknown; lastFinishedAt: unknown }[] = [];
      const asks: unknown[][] = [];
      class Recording extends PostgresJobRepository {
        override async saveJobState(job: JobParameters, options: JobRepositoryOptions | undefined): Promise<void> {
          saves.push({ lockedAt: job.lockedAt, lastFinishedAt: job.lastFinishedAt });
          return super.saveJobState(job, options);
        }
        override async getNextJobToRun(
          ...args: Parameters<PostgresJobRepository['getNextJobToRun']>
        ): ReturnType<PostgresJobRepository['getNextJobToRun']> {
          asks.push(args);
          return super.getNextJobToRun(...args);
        }
      }
      const store = await openStore(); // creates the table
      const agenda = agendaOn(
        backendOf(new Recording({ pool: jobsPool(), tableName: JOBS_TABLE, ensureSchema: false })),
        'contract-saves',
      );
      const name = jobName('saves');
      let runs = 0;
      agenda.define(name, async () => {
        runs += 1;
      });
      await agenda.start();
      await store.insertJob!({ name, data: { payload: null }, nextRunAt: new Date() }, 'contract');
      await waitFor(() => saves.length >= 2);
      await sleep(100);
      expect(runs).toBe(1);
      expect(saves).toHaveLength(2);
      expect(saves[0]!.lockedAt).toBeInstanceOf(Date);
      expect(saves[1]!.lockedAt).toBeFalsy();
      expect(saves[1]!.lastFinishedAt).toBeInstanceOf(Date);
      const ask = asks.find((args) => args[0] === name)!;
      expect(ask[1]).toBeInstanceOf(Date); // next scan
      expect(ask[2]).toBeInstanceOf(Date); // lock deadline: now minus the lock lifetime
      expect((ask[2] as Date).getTime()).toBeLessThan(Date.now() - 60_000);
      expect(ask[4]).toEqual({ lastModifiedBy: 'contract-saves' });
    },
  );

  it(
    '6. the channel emits stateChange "reconnecting" then "connected" when it reconnects by itself; ' +
      'closableChannel lets a late reconnection go',
    async () => {
      const pool = jobsPool(2);
      const backend = new PostgresBackend({
        pool,
        tableName: JOBS_TABLE,
        channelName: JOBS_CHANNEL,
        ensureSchema: false,
      });
      const channel = backend.notificationChannel!;
      channel.on('error', () => undefined);
      const states: string[] = [];
      channel.on('stateChange', (state) => states.push(state));
      const closable = closableChannel(channel);
      await backend.connect(); // hands the pool to the channel (Agenda's start() connects the channel)
      await channel.connect();
      const terminateListener = () =>
        pool.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`,
        );

      await terminateListener();
      await waitFor(() => states.includes('reconnecting') && states.at(-1) === 'connected');
      expect(channel.state).toBe('connected');

      // Lost again, and closed while a reconnection attempt waits for a connection: once the
      // attempt gets one, it must not keep it (the pool's end() would wait for it forever).
      states.length = 0;
      await terminateListener();
      await waitFor(() => states.includes('reconnecting'));
      const held = [await pool.connect(), await pool.connect()]; // the pool (max 2) is full
      await sleep(300); // the attempt's timer has fired: it waits for a connection
      await closable.close();
      for (const client of held) client.release();
      await sleep(300);
      expect(channel.state).toBe('disconnected');
      expect(pool.totalCount - pool.idleCount).toBe(0);
    },
  );
});
