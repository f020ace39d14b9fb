/**
 * `npm run bench:scale`: the create and read benchmarks of bench/submissions.ts (`POST
 * /api/submissions` with two submitters, the first emailed by a job; `GET /api/submissions?limit=100`,
 * a full page) against one instance and against two instances of Signet on the same database, and
 * the ratio two/one (bench/README.md "Several instances").
 *
 * - The instances run as `npm start` runs them (dist/main.mjs, LOG_LEVEL=warn, NODE_ENV=production),
 *   on one bench database (bench/bench-database.ts), with the same connection budget: one instance
 *   with DATABASE_POOL_SIZE=POOL_TOTAL, two with POOL_TOTAL/2 each (each instance has two pools of
 *   that size: Prisma's and the job store's), so the comparison is of processes, not connections.
 * - The load balancer is in this process: autocannon given every instance's URL opens its
 *   connections round-robin over them (connection i → instance i mod n), as an L4 balancer in front
 *   of replicas would; no proxy hop adds its own CPU to the figures.
 * - Each configuration: the instances started fresh, a warm-up run then a measured run of each
 *   benchmark; after the creates, the job backlog they left is drained before the next run. Rounds
 *   alternate the order (1 then 2, 2 then 1); the table shows medians.
 * - Besides req/s: the instances' CPU per request (all their processes, from /proc), and how busy the
 *   machine's cores were during the measured run (PostgreSQL and this process included): near 100 %,
 *   the limit is the machine's CPU, and a second instance cannot add throughput.
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_DURATION (s, default 8), BENCH_WARMUP (s,
 * default 2), BENCH_CONNECTIONS (default 20), BENCH_ROUNDS (default 2), BENCH_POOL_TOTAL (default
 * 10), BENCH_SEED (submissions made before the runs so that a page is full, default 120).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { type BenchDatabase, createBenchDatabase, redactUrl } from './bench-database.ts';
import { cleanUpOnSignals, onCleanup, runBench, runCleanups } from './cleanup.ts';
import {
  buildService,
  childEnv,
  cpuMs,
  freePort,
  type NodeChild,
  REPO_ROOT,
  sleep,
  spawnNode,
  stopChild,
  waitHealthy,
} from './processes.ts';
import { envNumber, fmt, median, print, round } from './util.ts';

const DURATION_S = envNumber('BENCH_DURATION', 8);
const WARMUP_S = envNumber('BENCH_WARMUP', 2);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 20);
const ROUNDS = envNumber('BENCH_ROUNDS', 2);
const POOL_TOTAL = envNumber('BENCH_POOL_TOTAL', 10);
const SEED = envNumber('BENCH_SEED', 120);
const SIGNET_ENV = { LOG_LEVEL: 'warn', NODE_ENV: 'production', CREATE_DEV_ACCOUNT: 'false' } as const;
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'documenso-letter-size.pdf');
const INSTANCE_COUNTS = [1, 2] as const;

type Key = 'list' | 'create';
const LABELS: Record<Key, string> = {
  list: 'GET  /api/submissions?limit=100',
  create: 'POST /api/submissions',
};

interface Instance {
  child: NodeChild;
  url: string;
}

interface Run {
  reqPerSec: number;
  p99Ms: number;
  /** CPU of the instances per request, microseconds. */
  cpuUsPerReq: number;
  /** Share of the machine's cores busy during the run, percent. */
  machineBusyPct: number;
  failed: number;
}

cleanUpOnSignals();

async function main(): Promise<number> {
  print(`Signet bench:scale — node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}-${os.arch()}`);
  buildService();
  const database = await createBenchDatabase(onCleanup);
  print(`  database: ${redactUrl(database.url)}`);
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  onCleanup('close the bench connection', () => sql.end());

  // The template and a full page of submissions, made through one instance.
  const setup = await startInstances(database, 1);
  const templateId = await createTemplate(setup[0]!.url, database.apiKey);
  const createBody = JSON.stringify({
    template_id: templateId,
    submitters: [
      { role: 'Buyer', email: 'buyer@example.test', name: 'Bea Buyer' },
      { role: 'Seller', email: 'seller@example.test', name: 'Sam Seller' },
    ],
  });
  for (let i = 0; i < SEED; i += 1) {
    const response = await fetch(`${setup[0]!.url}/api/submissions`, {
      method: 'POST',
      headers: { 'x-auth-token': database.apiKey, 'content-type': 'application/json' },
      body: createBody,
    });
    if (response.status !== 200) throw new Error(`POST /api/submissions answered ${response.status}`);
  }
  await drainJobs(sql, 60_000);
  await stopInstances(setup);
  print(`  template ${templateId} (two roles), ${SEED} submissions; pools: ${POOL_TOTAL} connections in all`);
  print(
    `\n[load] autocannon: ${CONNECTIONS} connections round-robin over the instances, ` +
      `${WARMUP_S} s warm-up + ${DURATION_S} s measured per run, ${ROUNDS} round(s)`,
  );

  const runs: Record<`${Key}:${number}`, Run[]> = {} as never;
  for (let round = 1; round <= ROUNDS; round += 1) {
    const order = round % 2 === 1 ? INSTANCE_COUNTS : [...INSTANCE_COUNTS].reverse();
    for (const count of order) {
      const instances = await startInstances(database, count);
      for (const key of ['list', 'create'] as const) {
        const body = key === 'create' ? createBody : undefined;
        await load(instances, database.apiKey, key, body, WARMUP_S);
        if (key === 'create') await drainJobs(sql, 120_000);
        const run = await measure(instances, database.apiKey, key, body);
        // The jobs of the measured creates run before the next run (or the next configuration).
        if (key === 'create') await drainJobs(sql, 120_000);
        (runs[`${key}:${count}`] ??= []).push(run);
        print(
          `  round ${round}  ${count} instance(s)  ${LABELS[key]}  ${fmt(run.reqPerSec, 0).padStart(6)} req/s  ` +
            `p99 ${fmt(run.p99Ms, 1).padStart(6)} ms  CPU ${fmt(run.cpuUsPerReq, 0).padStart(5)} µs/req  ` +
            `machine ${fmt(run.machineBusyPct, 0)} % busy${run.failed ? `  FAILED ${run.failed}` : ''}`,
        );
      }
      await stopInstances(instances);
    }
  }

  const summary: Record<string, unknown> = {};
  print(`\n${'='.repeat(100)}`);
  print(`Median of ${ROUNDS} round(s); one instance: pool ${POOL_TOTAL}; two: pool ${POOL_TOTAL / 2} each`);
  print('  benchmark                         instances    req/s   p99 ms  CPU µs/req  machine busy');
  let failed = 0;
  for (const key of ['list', 'create'] as const) {
    const rates: number[] = [];
    for (const count of INSTANCE_COUNTS) {
      const series = runs[`${key}:${count}`];
      const row = {
        reqPerSec: median(series.map((r) => r.reqPerSec)),
        p99Ms: median(series.map((r) => r.p99Ms)),
        cpuUsPerReq: median(series.map((r) => r.cpuUsPerReq)),
        machineBusyPct: median(series.map((r) => r.machineBusyPct)),
      };
      failed += series.reduce((sum, r) => sum + r.failed, 0);
      rates.push(row.reqPerSec);
      summary[`${key}_${count}`] = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, round(v, 1)]));
      print(
        `  ${LABELS[key]}  ${String(count).padStart(9)}  ${fmt(row.reqPerSec, 0).padStart(7)}  ` +
          `${fmt(row.p99Ms, 1).padStart(7)}  ${fmt(row.cpuUsPerReq, 0).padStart(10)}  ${fmt(row.machineBusyPct, 0)} %`,
      );
    }
    const ratio = rates[1]! / rates[0]!;
    summary[`${key}_ratio`] = round(ratio, 2);
    print(`  ${LABELS[key]}  2 instances / 1 instance: ${fmt(ratio, 2)}×`);
  }
  print('='.repeat(100));
  print(`BENCH_RESULT ${JSON.stringify(summary)}`);
  await runCleanups();
  return failed > 0 ? 1 : 0;
}

/** `count` instances on the database, each with DATABASE_POOL_SIZE = POOL_TOTAL / count. */
async function startInstances(database: BenchDatabase, count: number): Promise<Instance[]> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-scale-'));
  onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
  return Promise.all(
    Array.from({ length: count }, async () => {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const child = spawnNode(
        'dist/main.mjs',
        childEnv({
          ...SIGNET_ENV,
          DATABASE_URL: database.url,
          // One DATA_DIR for all, as replicas share their files (or S3).
          DATA_DIR: dataDir,
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_POOL_SIZE: String(Math.max(2, Math.floor(POOL_TOTAL / count))),
          SECRET_KEY_BASE: 'bench-scale-secret-key-base-shared-by-every-instance',
        }),
      );
      onCleanup(`stop Signet (pid ${child.pid})`, async () => {
        await stopChild(child);
      });
      await waitHealthy(child, url, performance.now(), 60_000);
      return { child, url };
    }),
  );
}

async function stopInstances(instances: Instance[]): Promise<void> {
  await Promise.all(instances.map((instance) => stopChild(instance.child)));
}

/** A one-page template with roles Buyer and Seller, a text and a signature field each (as bench/submissions.ts). */
async function createTemplate(url: string, apiKey: string): Promise<number> {
  const area = (y: number, h = 24) => [{ x: 72, y, w: 180, h, page: 1 }];
  const response = await fetch(`${url}/api/templates/pdf`, {
    method: 'POST',
    headers: { 'x-auth-token': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'Bench purchase agreement',
      documents: [{ name: 'agreement', file: (await fs.readFile(FIXTURE)).toString('base64') }],
      fields: [
        { name: 'Buyer Name', role: 'Buyer', areas: area(100) },
        { name: 'Buyer Signature', type: 'signature', role: 'Buyer', areas: area(140, 40) },
        { name: 'Seller Name', role: 'Seller', areas: area(400) },
        { name: 'Seller Signature', type: 'signature', role: 'Seller', areas: area(440, 40) },
      ],
    }),
  });
  const json = (await response.json()) as { id: number };
  if (response.status !== 200) throw new Error(`POST /api/templates/pdf answered ${response.status}`);
  return json.id;
}

function load(instances: Instance[], apiKey: string, key: Key, body: string | undefined, durationS: number) {
  const path = key === 'list' ? '/api/submissions?limit=100' : '/api/submissions';
  return autocannon({
    // Connection i goes to instance i mod n.
    url: instances.map((instance) => `${instance.url}${path}`),
    method: key === 'list' ? 'GET' : 'POST',
    headers: { 'x-auth-token': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
    connections: CONNECTIONS,
    duration: durationS,
    timeout: 10,
  });
}

async function measure(instances: Instance[], apiKey: string, key: Key, body: string | undefined): Promise<Run> {
  const cpuBefore = await Promise.all(instances.map((instance) => cpuMs(instance.child.pid)));
  const machineBefore = machineTimes();
  const result = await load(instances, apiKey, key, body, DURATION_S);
  const machine = machineTimes();
  const cpuAfter = await Promise.all(instances.map((instance) => cpuMs(instance.child.pid)));
  const cpuUsed = cpuAfter.reduce((sum, ms, i) => sum + ms - cpuBefore[i]!, 0);
  const busy = machine.busy - machineBefore.busy;
  const total = busy + machine.idle - machineBefore.idle;
  return {
    reqPerSec: result.requests.average,
    p99Ms: result.latency.p99,
    cpuUsPerReq: (cpuUsed * 1000) / Math.max(1, result.requests.total),
    machineBusyPct: total > 0 ? (100 * busy) / total : 0,
    failed: result.errors + result.timeouts + result.non2xx,
  };
}

/** The machine's CPU time so far, busy and idle, in milliseconds over all cores. */
function machineTimes(): { busy: number; idle: number } {
  let busy = 0;
  let idle = 0;
  for (const cpu of os.cpus()) {
    const { user, nice, sys, irq, idle: idleMs } = cpu.times;
    busy += user + nice + sys + irq;
    idle += idleMs;
  }
  return { busy, idle };
}

/** Waits until no job is running or due; the creates' emails are jobs. */
async function drainJobs(sql: pg.Client, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM agenda.jobs WHERE NOT disabled AND (locked_at IS NOT NULL OR next_run_at <= now()))
            + (SELECT count(*) FROM outbox) AS n`,
    );
    if (Number(rows[0]!.n) === 0) return;
    if (Date.now() > deadline) throw new Error(`jobs still pending after ${timeoutMs} ms: ${rows[0]!.n}`);
    await sleep(200);
  }
}

runBench(main);
