/**
 * `npm run bench`: Signet's benchmarks, each compared with a baseline in the same run (see
 * bench/README.md). Prints a table and a final `BENCH_RESULT {json}` line. Targets are reported
 * as PASS/MISS and never fail the run; the exit code is non-zero only when a benchmark could not
 * run or a request failed.
 *
 * 1. Throughput: autocannon (in this process) against Signet's REST `GET /api/user`, the same data
 *    through `POST /graphql`, and bench/baseline-server.ts (node:http + pg), each server in its own
 *    child process on the same database, pool size 10.
 * 2. Start-up as `npm start` does it (build dist/main.mjs, then `node dist/main.mjs`) with the embedded PostgreSQL,
 *    build start → /health 200, first start (initdb + migrations) and restart.
 * 3. Idle RSS of the Signet node process.
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_DURATION (s, default 8),
 * BENCH_CONNECTIONS (default 20), BENCH_WARMUP (s, default 2), BENCH_ROUNDS (default 2).
 */
import { deepStrictEqual } from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { type BenchDatabase, createBenchDatabase, redactUrl } from './bench-database.ts';
import {
  buildService,
  childEnv,
  cpuMs,
  freePort,
  type NodeChild,
  rssMb,
  sleep,
  spawnNode,
  stopChild,
  waitHealthy,
} from './processes.ts';
import { cleanUpOnSignals, onCleanup, runCleanups } from './cleanup.ts';
import { envNumber, median, round, fmt, passMiss, print } from './util.ts';

const DURATION_S = envNumber('BENCH_DURATION', 8);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 20);
const WARMUP_S = envNumber('BENCH_WARMUP', 2);
const ROUNDS = envNumber('BENCH_ROUNDS', 2);
const POOL_SIZE = 10;
const SIGNET_ENV = { LOG_LEVEL: 'warn', NODE_ENV: 'production' } as const;
const IDLE_MS = 2000;
const RSS_WARM_REQUESTS = 20;

const TARGETS = {
  restOverGraphql: 0.8,
  graphqlOverBaseline: 0.5,
  restartMs: 3000,
  idleRssMb: 200,
} as const;

const VIEWER_QUERY = '{ viewer { user { id email firstName lastName } } }';

type TargetKey = 'rest' | 'graphql' | 'baseline';

interface LoadTarget {
  key: TargetKey;
  /** The server process answering it. */
  pid: number;
  label: string;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

interface Run {
  round: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time of the server process (all threads) per completed request, microseconds. */
  cpuUsPerReq: number;
  errors: number;
  timeouts: number;
  non2xx: number;
}

cleanUpOnSignals();

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = performance.now();
  const problems: string[] = [];
  print(`Signet benchmarks — node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}-${os.arch()}`);

  // 2. Start-up first, on a quiet machine.
  print('\n[start-up] embedded PostgreSQL: first start, then restart …');
  const startup = await measureStartup();

  // Shared database for 1 and 3.
  print('\n[setup] bench database …');
  const database = await createBenchDatabase(onCleanup);
  print(
    `  ${database.kind === 'external' ? 'DATABASE_URL server' : 'embedded PostgreSQL (temp dir)'}: ` +
      `${redactUrl(database.url)}`,
  );

  const signet = await startSignet(database);
  const baseline = await startBaseline(database);
  print(
    `  Signet   pid ${signet.child.pid}  ${signet.url}  (node dist/main.mjs as npm start runs it, LOG_LEVEL=warn, ` +
      `NODE_ENV=production, pool ${POOL_SIZE})`,
  );
  print(
    `  baseline pid ${baseline.child.pid}  ${baseline.url}  (bench/baseline-server.ts: ` +
      `node:http + pg, pool ${POOL_SIZE})`,
  );

  // 3. Idle RSS on the fresh server, before any load.
  const rss = {
    signet: { afterStartMb: await rssMb(signet.child.pid) } as Record<string, number>,
    baseline: {} as Record<string, number>,
  };
  const targets = loadTargets(signet, baseline, database.apiKey);
  await checkResponses(targets, database);
  for (let i = 0; i < RSS_WARM_REQUESTS; i++) for (const target of targets) await request(target);
  rss.signet.afterRequestsMb = await rssMb(signet.child.pid);
  await sleep(IDLE_MS);
  rss.signet.idleMb = await rssMb(signet.child.pid);
  rss.baseline.idleMb = await rssMb(baseline.child.pid);

  // 1. Throughput, rounds in alternating order (A B C, C B A, …).
  print(
    `\n[load] autocannon: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s measured per run, ` +
      `${ROUNDS} round(s)`,
  );
  const runs: Record<TargetKey, Run[]> = { rest: [], graphql: [], baseline: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const target of order) {
      await load(target, WARMUP_S);
      const cpuBefore = await cpuMs(target.pid);
      const result = await load(target, DURATION_S);
      const cpuUsed = (await cpuMs(target.pid)) - cpuBefore;
      const run: Run = {
        round,
        reqPerSec: result.requests.average,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        cpuUsPerReq: (cpuUsed * 1000) / Math.max(1, result.requests.total),
        errors: result.errors,
        timeouts: result.timeouts,
        non2xx: result.non2xx,
      };
      runs[target.key].push(run);
      const failed = run.errors + run.timeouts + run.non2xx;
      if (failed > 0)
        problems.push(
          `${target.label}, round ${round}: ${run.errors} errors, ${run.timeouts} timeouts, ${run.non2xx} non-2xx`,
        );
      print(
        `  round ${round}  ${target.label.padEnd(34)} ${fmt(run.reqPerSec, 0).padStart(7)} req/s  p99 ` +
          `${fmt(run.p99Ms, 1).padStart(6)} ms  CPU ${fmt(run.cpuUsPerReq, 0).padStart(5)} µs/req` +
          (failed > 0 ? `  (${failed} failed requests)` : ''),
      );
    }
  }
  if (signet.child.exited()) problems.push(`the Signet server exited during the load:\n${signet.child.output()}`);

  await sleep(IDLE_MS);
  rss.signet.afterLoadIdleMb = await rssMb(signet.child.pid);
  rss.baseline.afterLoadIdleMb = await rssMb(baseline.child.pid);

  const summary = Object.fromEntries(
    (Object.keys(runs) as TargetKey[]).map((key) => [
      key,
      {
        reqPerSec: round(median(runs[key].map((r) => r.reqPerSec)), 0),
        p50Ms: round(median(runs[key].map((r) => r.p50Ms)), 2),
        p99Ms: round(median(runs[key].map((r) => r.p99Ms)), 2),
        cpuUsPerReq: round(median(runs[key].map((r) => r.cpuUsPerReq)), 0),
        runs: runs[key].map((r) => ({ ...r, reqPerSec: round(r.reqPerSec, 0), cpuUsPerReq: round(r.cpuUsPerReq, 0) })),
      },
    ]),
  ) as Record<TargetKey, { reqPerSec: number; p50Ms: number; p99Ms: number; cpuUsPerReq: number; runs: Run[] }>;

  const ratio = (value: number, target: number) => ({ value: round(value, 3), target, pass: value >= target });
  const ratios = {
    restOverGraphql: ratio(summary.rest.reqPerSec / summary.graphql.reqPerSec, TARGETS.restOverGraphql),
    graphqlOverBaseline: ratio(summary.graphql.reqPerSec / summary.baseline.reqPerSec, TARGETS.graphqlOverBaseline),
    restOverBaseline: round(summary.rest.reqPerSec / summary.baseline.reqPerSec, 3),
  };
  const rssResult = {
    signet: roundAll(rss.signet, 1),
    baseline: roundAll(rss.baseline, 1),
    targetIdleMb: TARGETS.idleRssMb,
    pass: rss.signet.idleMb! <= TARGETS.idleRssMb,
  };

  // Report.
  const labels: Record<TargetKey, string> = {
    rest: 'REST    GET /api/user',
    graphql: 'GraphQL POST /graphql',
    baseline: 'baseline node:http + pg',
  };
  print(`\n${'='.repeat(92)}`);
  print(
    `Throughput — median of ${ROUNDS} run(s) each, ${CONNECTIONS} connections, ${DURATION_S} s runs after ` +
      `${WARMUP_S} s warm-up`,
  );
  print(
    `Signet at LOG_LEVEL=warn, NODE_ENV=production; ` +
      `same database (${database.kind}), pool ${POOL_SIZE} for both servers`,
  );
  print(
    `  ${'server'.padEnd(25)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ` +
      `${'CPU µs/req'.padStart(11)}   per run (req/s)`,
  );
  for (const key of ['rest', 'graphql', 'baseline'] as const) {
    const s = summary[key];
    print(
      `  ${labels[key].padEnd(25)} ${fmt(s.reqPerSec, 0).padStart(8)} ${fmt(s.p50Ms, 2).padStart(8)} ` +
        `${fmt(s.p99Ms, 2).padStart(8)} ${fmt(s.cpuUsPerReq, 0).padStart(11)}   ` +
        s.runs.map((r) => fmt(r.reqPerSec, 0)).join(', '),
    );
  }
  print('Ratios (req/s)');
  print(
    `  REST / GraphQL        ${fmt(ratios.restOverGraphql.value, 2).padStart(6)}   target ≥ ` +
      `${TARGETS.restOverGraphql}   ${passMiss(ratios.restOverGraphql.pass)}`,
  );
  print(
    `  GraphQL / baseline    ${fmt(ratios.graphqlOverBaseline.value, 2).padStart(6)}   target ≥ ` +
      `${TARGETS.graphqlOverBaseline}   ${passMiss(ratios.graphqlOverBaseline.pass)}`,
  );
  print(`  REST / baseline       ${fmt(ratios.restOverBaseline, 2).padStart(6)}   (information)`);
  print(
    `  CPU per request vs baseline: REST ${fmt(summary.rest.cpuUsPerReq / summary.baseline.cpuUsPerReq, 1)}×, ` +
      `GraphQL ${fmt(summary.graphql.cpuUsPerReq / summary.baseline.cpuUsPerReq, 1)}×` +
      '  (server process, all threads; PostgreSQL not included)',
  );
  print('Start-up with the embedded PostgreSQL (build + spawn dist/main.mjs → GET /health 200)');
  print(
    `  first start (initdb + migrations)  ${fmt(startup.firstStartMs / 1000, 2).padStart(6)} s   (SIGTERM → exit ` +
      `${fmt(startup.firstStopMs / 1000, 2)} s)`,
  );
  print(
    `  restart                            ${fmt(startup.restartMs / 1000, 2).padStart(6)} s   (SIGTERM → exit ` +
      `${fmt(startup.restartStopMs / 1000, 2)} s)   target ≤ ${TARGETS.restartMs / 1000} s   ${passMiss(startup.pass)}`,
  );
  print(`RSS of the Signet node process (VmRSS, MB)`);
  print(
    `  after start ${fmt(rss.signet.afterStartMb!, 1)}, after ${RSS_WARM_REQUESTS * targets.length} requests ` +
      `${fmt(rss.signet.afterRequestsMb!, 1)}`,
  );
  print(
    `  idle (${IDLE_MS / 1000} s later)  ${fmt(rss.signet.idleMb!, 1).padStart(6)}   target ≤ ${TARGETS.idleRssMb}` +
      `   ${passMiss(rssResult.pass)}`,
  );
  print(
    `  after the load + ${IDLE_MS / 1000} s idle ${fmt(rss.signet.afterLoadIdleMb!, 1)}   (baseline process: idle ` +
      `${fmt(rss.baseline.idleMb!, 1)}, after load ${fmt(rss.baseline.afterLoadIdleMb!, 1)})`,
  );
  for (const problem of problems) print(`PROBLEM: ${problem}`);
  print('='.repeat(92));

  await runCleanups();
  const result = {
    node: process.version,
    cpus: os.cpus().length,
    database: database.kind,
    settings: {
      durationS: DURATION_S,
      warmupS: WARMUP_S,
      connections: CONNECTIONS,
      rounds: ROUNDS,
      poolSize: POOL_SIZE,
      signetLogLevel: SIGNET_ENV.LOG_LEVEL,
      signetNodeEnv: SIGNET_ENV.NODE_ENV,
    },
    throughput: summary,
    ratios,
    startup,
    rss: rssResult,
    problems,
    totalS: round((performance.now() - started) / 1000, 1),
  };
  print(`BENCH_RESULT ${JSON.stringify(result)}`);
  return problems.length > 0 ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// Start-up

async function measureStartup() {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-start-'));
  await fs.chmod(dataDir, 0o755);
  const removeDataDir = onCleanup(`remove ${dataDir}`, async () => {
    await killLeftoverPostgres(dataDir);
    await fs.rm(dataDir, { recursive: true, force: true });
  });
  const first = await startAndStop(dataDir);
  print(`  first start: healthy after ${fmt(first.healthyMs / 1000, 2)} s`);
  const again = await startAndStop(dataDir);
  print(`  restart:     healthy after ${fmt(again.healthyMs / 1000, 2)} s`);
  await removeDataDir();
  return {
    firstStartMs: round(first.healthyMs, 0),
    restartMs: round(again.healthyMs, 0),
    firstStopMs: round(first.stopMs, 0),
    restartStopMs: round(again.stopMs, 0),
    targetRestartMs: TARGETS.restartMs,
    pass: again.healthyMs <= TARGETS.restartMs,
  };
}

/**
 * Builds and spawns the service as `npm start` does, on the
 * embedded database under `dataDir`; waits for /health, stops it.
 */
async function startAndStop(dataDir: string): Promise<{ healthyMs: number; stopMs: number }> {
  const port = await freePort();
  const env = childEnv({ ...SIGNET_ENV, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
  const since = performance.now();
  buildService();
  const child = spawnNode('dist/main.mjs', env);
  const stop = onCleanup(`stop dist/main.mjs (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  const healthyMs = await waitHealthy(child, `http://127.0.0.1:${port}`, since, 120_000);
  // Let the first start finish its work after listening (the development account) before stopping.
  await child.waitForLine(/^Signet is running at /, 30_000);
  const stopStarted = performance.now();
  await stop();
  if (child.process.exitCode !== 0)
    throw new Error(
      `dist/main.mjs exited with ${child.process.exitCode ?? child.process.signalCode}:\n${child.output()}`,
    );
  return { healthyMs, stopMs: performance.now() - stopStarted };
}

/** If a start-up run died without stopping its PostgreSQL, stop that server (immediate shutdown). */
async function killLeftoverPostgres(dataDir: string): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt(
      (await fs.readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]!,
      10,
    );
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    return; // not running
  }
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------
// Servers under load

interface Server {
  child: NodeChild;
  url: string;
}

async function startSignet(database: BenchDatabase): Promise<Server> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-data-'));
  onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  buildService();
  const child = spawnNode(
    'dist/main.mjs',
    childEnv({
      ...SIGNET_ENV,
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      CREATE_DEV_ACCOUNT: 'false',
    }),
  );
  onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 60_000);
  return { child, url };
}

async function startBaseline(database: BenchDatabase): Promise<Server> {
  const child = spawnNode(
    'bench/baseline-server.ts',
    childEnv({ NODE_ENV: SIGNET_ENV.NODE_ENV, DATABASE_URL: database.url, PORT: '0', POOL_SIZE: String(POOL_SIZE) }),
  );
  onCleanup(`stop the baseline server (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  const [, url] = await child.waitForLine(/^LISTENING (\S+)/, 30_000);
  return { child, url: url! };
}

function loadTargets(signet: Server, baseline: Server, apiKey: string): LoadTarget[] {
  return [
    {
      key: 'rest',
      label: 'REST GET /api/user',
      pid: signet.child.pid,
      url: `${signet.url}/api/user`,
      method: 'GET',
      headers: { 'x-auth-token': apiKey },
    },
    {
      key: 'graphql',
      label: 'GraphQL POST /graphql',
      pid: signet.child.pid,
      url: `${signet.url}/graphql`,
      method: 'POST',
      headers: { 'x-auth-token': apiKey, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: VIEWER_QUERY }),
    },
    {
      key: 'baseline',
      label: 'baseline GET /api/user',
      pid: baseline.child.pid,
      url: `${baseline.url}/api/user`,
      method: 'GET',
      headers: { 'x-auth-token': apiKey },
    },
  ];
}

async function request(target: LoadTarget): Promise<{ status: number; body: any }> {
  const response = await fetch(target.url, {
    method: target.method,
    headers: target.headers,
    body: target.body,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: await response.json() };
}

/** All three answer the same user before we time them. */
async function checkResponses(targets: LoadTarget[], database: BenchDatabase): Promise<void> {
  const { id, email, firstName, lastName } = database.user;
  const expected = { id, first_name: firstName, last_name: lastName, email };
  for (const target of targets) {
    const { status, body } = await request(target);
    if (status !== 200) throw new Error(`${target.label} answered ${status}: ${JSON.stringify(body)}`);
    const user = target.key === 'graphql' ? body?.data?.viewer?.user : body;
    const actual =
      target.key === 'graphql'
        ? { id: user?.id, first_name: user?.firstName, last_name: user?.lastName, email: user?.email }
        : { id: user.id, first_name: user.first_name, last_name: user.last_name, email: user.email };
    deepStrictEqual(actual, expected, `${target.label} answered ${JSON.stringify(body)}`);
  }
}

function load(target: LoadTarget, durationS: number) {
  return autocannon({
    url: target.url,
    method: target.method,
    headers: target.headers,
    body: target.body,
    connections: CONNECTIONS,
    duration: durationS,
    timeout: 10,
  });
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function roundAll(values: Record<string, number>, digits: number): Record<string, number> {
  return Object.fromEntries(Object.entries(values).map(([key, value]) => [key, round(value, digits)]));
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

main()
  .then((code) => {
    process.exitCode = code;
  })
  .catch(async (error) => {
    process.stderr.write(`bench failed: ${describe(error)}\n`);
    await runCleanups();
    process.exitCode = 1;
  });
