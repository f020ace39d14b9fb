/**
 * `npm run bench:submissions`: the submission benchmarks of issue 4 (see bench/README.md). Prints
 * a table, PASS/MISS against the targets, and a final `BENCH_RESULT {json}` line. Targets never
 * fail the run; the exit code is non-zero only when something could not run or answered wrongly.
 *
 * 1. Set-up: a fresh bench database (bench/bench-database.ts), the service as `npm start` runs it
 *    (dist/main.mjs; LOG_LEVEL=warn, NODE_ENV=production, CREATE_DEV_ACCOUNT=false, no SMTP_URL
 *    or SENDGRID_API_KEY, so mail goes to the outbox table), a template with two roles (a text
 *    and a signature field each) and one submission made through the API, whose email job runs.
 *    Then 10,000 copies of that submission's rows are inserted with SQL: submissions, submitters,
 *    submission_events, the outbox email_messages and Agenda's finished job rows, each with new
 *    ids, slugs, uuids, addresses and dedupe/unique keys — what 10,000 API calls would have left.
 * 2. SQL statements per request: the same service started behind bench/pg-statement-proxy.ts,
 *    which records every statement sent to PostgreSQL (simple Query and extended-protocol Execute
 *    messages) and which pool sent it. Requests are made one at a time on a quiet service; for
 *    POST /api/submissions, the statements of the jobs it enqueues are counted apart. Then creates
 *    under load for a few seconds, and every statement until their jobs are done, per create.
 * 3. Load: that instance is stopped and a new one started directly on the database; autocannon
 *    (in this process, loopback) runs `GET /api/user` (baseline), `GET /api/submissions?limit=100`
 *    and `POST /api/submissions` (two submitters, preserved order: the first one is emailed by a
 *    job in the same process), each a warm-up then a measured run; the list also on one
 *    connection for 3 s (its latency without queueing, for information). The create run starts
 *    once its warm-up's jobs are done; then the job backlog the creates left is timed until it
 *    drains, and every created submission is checked to have had exactly its first party's email
 *    stored. "With its jobs": the CPU of the create run and of that drain per create, and the
 *    creates per second over the run and the drain (what one process sustains, jobs included).
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_DURATION (s, default 8), BENCH_WARMUP
 * (s, default 2), BENCH_CONNECTIONS (default 20), BENCH_SEED (default 10000), BENCH_SQL_SAMPLES
 * (default 10), BENCH_DRAIN_S (default 60), BENCH_PROFILE_DIR (as BENCH_CPU_PROFILE=1, and the
 * .cpuprofile is kept there, for Chrome DevTools), BENCH_CPU_PROFILE=1 (profile the load instance with
 * --cpu-prof and print where its time went in each measured run), BENCH_SHOW_SQL=1 (print one
 * request's statements; BENCH_SQL_WIDTH characters of each, default 140).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { createBenchDatabase, redactUrl } from './bench-database.ts';
import { cleanUpOnSignals, onCleanup, runCleanups, runBench } from './cleanup.ts';
import { startStatementProxy, type RecordedStatement, type StatementProxy } from './pg-statement-proxy.ts';
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
import { envNumber, round, fmt, passMiss, print } from './util.ts';
import { monotonicUs, summarizeCpuProfiles } from './profile.ts';

const DURATION_S = envNumber('BENCH_DURATION', 8);
const WARMUP_S = envNumber('BENCH_WARMUP', 2);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 20);
const SEED = envNumber('BENCH_SEED', 10_000);
const SQL_SAMPLES = envNumber('BENCH_SQL_SAMPLES', 10);
const DRAIN_S = envNumber('BENCH_DRAIN_S', 60);
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE === '1';
const SHOW_SQL = process.env.BENCH_SHOW_SQL === '1';
const SINGLE_S = 3;
/** Pause after a run whose requests may still be queued in the service (20 lists take ~2 s). */
const SETTLE_MS = 2500;
const SIGNET_ENV = { LOG_LEVEL: 'warn', NODE_ENV: 'production', CREATE_DEV_ACCOUNT: 'false' } as const;
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'documenso-letter-size.pdf');
const SEND_JOB = 'send-signature-request';

const TARGETS = { createReqPerSec: 300, listP99Ms: 50 } as const;

type Key = 'user' | 'list' | 'create';
const LABELS: Record<Key, string> = {
  user: 'GET  /api/user (baseline)',
  list: 'GET  /api/submissions?limit=100',
  create: 'POST /api/submissions',
};

interface Request {
  key: Key;
  path: string;
  method: 'GET' | 'POST';
  body?: string;
}

cleanUpOnSignals();

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = performance.now();
  const problems: string[] = [];
  print(
    `Signet submission benchmarks — node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}-${os.arch()}`,
  );

  print('\n[setup] bench database …');
  const database = await createBenchDatabase(onCleanup);
  print(
    `  ${database.kind === 'external' ? 'DATABASE_URL server' : 'embedded PostgreSQL (temp dir)'}: ` +
      `${redactUrl(database.url)}`,
  );
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  onCleanup('close the bench SQL client', () => sql.end());
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-submissions-'));
  onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
  buildService();

  // The statement-counting instance also makes the template and the seed's model submission.
  const proxy = await startStatementProxy(database.url);
  const closeProxy = onCleanup('close the statement proxy', () => proxy.close());
  const counted = await startSignet(proxy.url, dataDir);
  print(
    `  Signet pid ${counted.child.pid} behind the statement proxy (dist/main.mjs as npm start runs it, ${Object.entries(
      SIGNET_ENV,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}, outbox mail)`,
  );
  const api = client(counted.url, database.apiKey);

  const template = await createTemplate(api);
  const requests = benchRequests(template.id);
  const prototype = await checkCreate(api, requests.create);
  await waitForJobs(sql, 10_000);
  print(
    `  template ${template.id} (roles ${template.roles.join(', ')}; ${template.fields} fields); ` +
      `model submission ${prototype.submissionId} created through the API, its email job done`,
  );

  print(`\n[seed] ${SEED} submissions by SQL, copies of submission ${prototype.submissionId} …`);
  const seeded = await seedSubmissions(sql, prototype.submissionId, SEED);
  print(
    `  ${seeded.submissions} submissions, ${seeded.submitters} submitters, ${seeded.events} events, ` +
      `${seeded.emails} outbox emails, ${seeded.jobs} finished jobs in ${fmt(seeded.ms / 1000, 2)} s (+ ANALYZE)`,
  );
  const listBytes = await checkList(api, requests.list);
  print(`  GET ${requests.list.path}: 100 submissions with 2 submitters each, ${fmt(listBytes / 1024, 0)} KB of JSON`);

  print(`\n[sql] statements per request, ${SQL_SAMPLES} samples each, one request at a time …`);
  const statements = await countStatements(api, proxy, sql, requests);
  for (const key of ['user', 'list', 'create'] as const)
    print(`  ${LABELS[key].padEnd(32)} ${describeCount(statements[key])}`);
  print(
    `  background: the job store's scan for due jobs, ${fmt(statements.backgroundPerSecond, 1)} statements/s ` +
      `on an idle service`,
  );
  const underLoad = await countStatementsUnderLoad(counted.url, database.apiKey, proxy, sql, requests.create);
  print(
    `  ${LABELS.create} under load (${CONNECTIONS} connections, ${LOAD_COUNT_S} s, then its jobs): ` +
      `${fmt(underLoad.perCreate, 1)} statements per create with its jobs ` +
      `(${fmt(underLoad.servicePerCreate, 1)} on the service's pool, ` +
      `${fmt(underLoad.jobStorePerCreate, 1)} on the job store's; ${underLoad.creates} creates): ` +
      underLoad.kinds.map((k) => `${fmt(k.perCreate, 2)} ${k.kind}`).join(', '),
  );
  await stopChild(counted.child);
  await closeProxy();

  print(`\n[load] autocannon: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s measured per run`);
  const keepProfileIn = process.env.BENCH_PROFILE_DIR;
  const profileDir = keepProfileIn
    ? await fs.mkdir(keepProfileIn, { recursive: true }).then(() => keepProfileIn)
    : CPU_PROFILE
      ? await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-profile-'))
      : undefined;
  if (profileDir && !keepProfileIn)
    onCleanup(`remove ${profileDir}`, () => fs.rm(profileDir, { recursive: true, force: true }));
  const signet = await startSignet(database.url, dataDir, profileDir);
  print(`  Signet pid ${signet.child.pid} directly on the database${profileDir ? ' (--cpu-prof)' : ''}`);
  const lastIdBefore = Number((await sql.query('SELECT coalesce(max(id), 0) AS id FROM submissions')).rows[0].id);

  const runs = {} as Record<Key, Run>;
  const phases: Phase[] = [];
  let listOneConnection = { reqPerSec: 0, p50Ms: 0, p99Ms: 0, requests: 0 };
  let backlogAfterCreate = 0;
  for (const request of [requests.user, requests.list, requests.create]) {
    await load(signet.url, database.apiKey, request, WARMUP_S);
    // The warm-up's jobs are not the measured run's: let them finish first.
    if (request.key === 'create') await waitForJobs(sql, DRAIN_S * 1000);
    const cpuBefore = await cpuMs(signet.child.pid);
    const runStarted = monotonicUs();
    const result = await load(signet.url, database.apiKey, request, DURATION_S);
    phases.push({ key: request.key, startUs: runStarted, endUs: monotonicUs() });
    const cpuUsed = (await cpuMs(signet.child.pid)) - cpuBefore;
    if (request.key === 'create') backlogAfterCreate = await pendingJobs(sql);
    const run: Run = {
      reqPerSec: round(result.requests.average, 0),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      cpuUsPerReq: round((cpuUsed * 1000) / Math.max(1, result.requests.total), 0),
      requests: result.requests.total,
      errors: result.errors,
      timeouts: result.timeouts,
      non2xx: result.non2xx,
    };
    runs[request.key] = run;
    const failed = run.errors + run.timeouts + run.non2xx;
    if (failed > 0)
      problems.push(`${LABELS[request.key]}: ${run.errors} errors, ${run.timeouts} timeouts, ${run.non2xx} non-2xx`);
    print(
      `  ${LABELS[request.key].padEnd(32)} ${fmt(run.reqPerSec, 0).padStart(6)} req/s  ` +
        `p50 ${fmt(run.p50Ms, 1).padStart(6)} ms  p99 ${fmt(run.p99Ms, 1).padStart(6)} ms  ` +
        `CPU ${fmt(run.cpuUsPerReq, 0).padStart(5)} µs/req` +
        (failed > 0 ? `  (${failed} failed)` : ''),
    );
    if (request.key === 'list') {
      // For information: the latency of one list request at a time (no queueing behind others),
      // once the requests still queued in the service when autocannon stopped are done.
      await sleep(SETTLE_MS);
      const single = await load(signet.url, database.apiKey, request, SINGLE_S, 1);
      listOneConnection = {
        reqPerSec: round(single.requests.average, 1),
        p50Ms: single.latency.p50,
        p99Ms: single.latency.p99,
        requests: single.requests.total,
      };
      if (single.errors + single.timeouts + single.non2xx > 0)
        problems.push(`${LABELS.list} on one connection: failed requests`);
      print(
        `  ${'  the same, one connection'.padEnd(32)} ${fmt(listOneConnection.reqPerSec, 0).padStart(6)} req/s  ` +
          `p50 ${fmt(listOneConnection.p50Ms, 1).padStart(6)} ms  ` +
          `p99 ${fmt(listOneConnection.p99Ms, 1).padStart(6)} ms  ` +
          `(${SINGLE_S} s, information)`,
      );
    }
  }

  // The jobs the creates enqueued: per submission, its first party's email (preserved order) and
  // its submission.created event (dispatch-event, no delivery: the account has no webhook endpoint).
  print(
    `  job backlog right after the create run: ${backlogAfterCreate} due or running; ` +
      `waiting for it to drain (≤ ${DRAIN_S} s) …`,
  );
  const drainStarted = performance.now();
  const drainCpuBefore = await cpuMs(signet.child.pid);
  const drained = await waitForJobs(sql, DRAIN_S * 1000).then(
    () => true,
    () => false,
  );
  const drainS = (performance.now() - drainStarted) / 1000;
  // CPU of the service per job while it runs jobs alone (this process's 10 ms polling included).
  const drainCpuMs = (await cpuMs(signet.child.pid)) - drainCpuBefore;
  const jobCpuUs = round((drainCpuMs * 1000) / Math.max(backlogAfterCreate, 1), 0);
  // Every create with the jobs it caused (all run in this process): the CPU of the measured run
  // and of the drain after it, per create; and the rate sustained until its last job was done.
  const withJobs = {
    cpuUsPerCreate: round(
      (runs.create.cpuUsPerReq * runs.create.requests + drainCpuMs * 1000) / Math.max(runs.create.requests, 1),
      0,
    ),
    createsPerSecond: round(runs.create.requests / (DURATION_S + drainS), 0),
  };
  const delivery = await checkDelivery(sql, lastIdBefore);
  if (!drained) problems.push(`the job backlog did not drain within ${DRAIN_S} s (${await pendingJobs(sql)} left)`);
  if (delivery.firstPartyEmails !== delivery.submissions || delivery.otherEmails !== 0) {
    problems.push(
      `outbox: ${delivery.submissions} submissions created under load, ` +
        `${delivery.firstPartyEmails} first-party emails sent, ${delivery.otherEmails} others`,
    );
  }
  print(
    `  drained in ${fmt(drainS, 1)} s (${fmt(backlogAfterCreate / Math.max(drainS, 0.001), 0)} jobs/s ` +
      `with no requests, CPU ${jobCpuUs} µs per job); ` +
      `${delivery.submissions} submissions created under load, ` +
      `${delivery.firstPartyEmails} first-party emails stored and sent, ${delivery.otherEmails} to second parties`,
  );
  if (signet.child.exited()) problems.push(`the Signet server exited during the load:\n${signet.child.output()}`);
  await stopChild(signet.child);
  const profile = profileDir ? await summarizeProfile(profileDir, phases) : undefined;

  // Report.
  const base = runs.user;
  const ratios = {
    createOverUser: {
      reqPerSec: round(runs.create.reqPerSec / base.reqPerSec, 3),
      p99: round(runs.create.p99Ms / base.p99Ms, 2),
    },
    listOverUser: {
      reqPerSec: round(runs.list.reqPerSec / base.reqPerSec, 3),
      p99: round(runs.list.p99Ms / base.p99Ms, 2),
    },
  };
  const pass = {
    create: runs.create.reqPerSec >= TARGETS.createReqPerSec,
    createWithJobs: withJobs.createsPerSecond >= TARGETS.createReqPerSec,
    list: runs.list.p99Ms <= TARGETS.listP99Ms,
  };
  print(`\n${'='.repeat(100)}`);
  print(
    `Submissions — ${SEED} seeded submissions, ${CONNECTIONS} connections, ${DURATION_S} s runs after ` +
      `${WARMUP_S} s warm-up, one Signet process, database: ${database.kind}`,
  );
  print(
    `  ${'request'.padEnd(32)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ` +
      `${'CPU µs/req'.padStart(10)} ${'×req/s'.padStart(7)} ${'×p99'.padStart(6)}  SQL statements per request`,
  );
  for (const key of ['user', 'list', 'create'] as const) {
    const r = runs[key];
    const ratio =
      key === 'user' ? { reqPerSec: 1, p99: 1 } : key === 'list' ? ratios.listOverUser : ratios.createOverUser;
    print(
      `  ${LABELS[key].padEnd(32)} ${fmt(r.reqPerSec, 0).padStart(7)} ${fmt(r.p50Ms, 1).padStart(7)} ` +
        `${fmt(r.p99Ms, 1).padStart(7)} ${fmt(r.cpuUsPerReq, 0).padStart(10)} ${fmt(ratio.reqPerSec, 3).padStart(7)} ` +
        `${fmt(ratio.p99, 1).padStart(6)}  ${shortCount(statements[key])}`,
    );
  }
  print(
    `  ${'  the same, with its jobs'.padEnd(32)} ${fmt(withJobs.createsPerSecond, 0).padStart(7)} ` +
      `${''.padStart(7)} ${''.padStart(7)} ${fmt(withJobs.cpuUsPerCreate, 0).padStart(10)} ` +
      `${fmt(withJobs.createsPerSecond / base.reqPerSec, 3).padStart(7)}         ` +
      `(creates per second until their last job was done; CPU per create with its jobs: ` +
      `×${fmt(withJobs.cpuUsPerCreate / Math.max(base.cpuUsPerReq, 1), 1)} the baseline's per request)`,
  );
  print('  (× = ratio to the baseline GET /api/user in the same run)');
  print('Targets');
  print(
    `  POST /api/submissions ≥ ${TARGETS.createReqPerSec} req/s         ` +
      `${fmt(runs.create.reqPerSec, 0).padStart(6)} req/s   ` +
      `${passMiss(pass.create)}  (during the run; its jobs partly left for after)`,
  );
  print(
    `    the same, its jobs done ≥ ${TARGETS.createReqPerSec}/s     ` +
      `${fmt(withJobs.createsPerSecond, 0).padStart(6)} /s      ` +
      `${passMiss(pass.createWithJobs)}  (creates over the run and the drain of their jobs)`,
  );
  print(
    `  GET /api/submissions?limit=100 p99 ≤ ${TARGETS.listP99Ms} ms  ${fmt(runs.list.p99Ms, 1).padStart(6)} ms      ` +
      `${passMiss(pass.list)}`,
  );
  print(
    `  (list, one connection at a time: p50 ${fmt(listOneConnection.p50Ms, 1)} ms, ` +
      `p99 ${fmt(listOneConnection.p99Ms, 1)} ms, ${fmt(listOneConnection.reqPerSec, 1)} req/s)`,
  );
  print(
    `Jobs (each create's first-party email; no event job: the bench account has no webhook endpoint): ` +
      `${backlogAfterCreate} due or running after the create run, drained in ${fmt(drainS, 1)} s ` +
      `(${fmt(backlogAfterCreate / Math.max(drainS, 0.001), 0)} jobs/s, CPU ${jobCpuUs} µs per job); ` +
      `${delivery.firstPartyEmails}/${delivery.submissions} first-party emails`,
  );
  if (profile) {
    print(`CPU profile of the load instance (--cpu-prof), self time during each measured run (idle excluded):`);
    for (const phase of profile) {
      print(`  ${LABELS[phase.key]}: ${fmt(phase.totalMs / 1000, 1)} s of CPU sampled; by origin:`);
      for (const row of phase.byOrigin.slice(0, 10)) print(`    ${fmt(row.percent, 1).padStart(5)} %  ${row.name}`);
      print('    top functions:');
      for (const row of phase.byFunction.slice(0, 12)) print(`    ${fmt(row.percent, 1).padStart(5)} %  ${row.name}`);
    }
  }
  for (const problem of problems) print(`PROBLEM: ${problem}`);
  print('='.repeat(100));

  await runCleanups();
  const result = {
    node: process.version,
    cpus: os.cpus().length,
    database: database.kind,
    settings: {
      durationS: DURATION_S,
      warmupS: WARMUP_S,
      connections: CONNECTIONS,
      seed: SEED,
      sqlSamples: SQL_SAMPLES,
      signet: SIGNET_ENV,
      mail: 'outbox',
    },
    seed: { ...seeded, ms: round(seeded.ms, 0), method: 'sql-copies-of-an-api-created-submission' },
    listPageBytes: listBytes,
    throughput: runs,
    listOneConnection,
    ratiosToUser: ratios,
    targets: {
      createReqPerSec: { target: TARGETS.createReqPerSec, value: runs.create.reqPerSec, pass: pass.create },
      createWithJobsPerSec: {
        target: TARGETS.createReqPerSec,
        value: withJobs.createsPerSecond,
        pass: pass.createWithJobs,
      },
      listP99Ms: { target: TARGETS.listP99Ms, value: runs.list.p99Ms, pass: pass.list },
    },
    sqlStatements: { ...statements, createUnderLoad: underLoad },
    jobs: {
      backlogAfterCreate,
      drainS: round(drainS, 1),
      jobsPerSecond: round(backlogAfterCreate / Math.max(drainS, 0.001), 0),
      cpuUsPerJob: jobCpuUs,
      drained,
      ...delivery,
    },
    createWithJobs: { ...withJobs, cpuOverUser: round(withJobs.cpuUsPerCreate / Math.max(base.cpuUsPerReq, 1), 2) },
    ...(profile
      ? {
          cpuProfile: profile.map((p) => ({
            ...p,
            byOrigin: p.byOrigin.slice(0, 20),
            byFunction: p.byFunction.slice(0, 25),
          })),
        }
      : {}),
    problems,
    totalS: round((performance.now() - started) / 1000, 1),
  };
  print(`BENCH_RESULT ${JSON.stringify(result)}`);
  return problems.length > 0 ? 1 : 0;
}

interface Run {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time of the Signet process (all threads, the job runner included) per completed request, µs. */
  cpuUsPerReq: number;
  requests: number;
  errors: number;
  timeouts: number;
  non2xx: number;
}

// ---------------------------------------------------------------------------------------------
// The service and its API

interface Server {
  child: NodeChild;
  url: string;
}

/** dist/main.mjs as `npm start` runs it, on `databaseUrl`; `profileDir` adds --cpu-prof. */
async function startSignet(databaseUrl: string, dataDir: string, profileDir?: string): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = childEnv({
    ...SIGNET_ENV,
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
  });
  for (const name of ['SMTP_URL', 'SENDGRID_API_KEY', 'TWILIO_ACCOUNT_SID', 'JOBS_MONGODB_URL']) delete env[name];
  const child = spawnNode('dist/main.mjs', env, profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
  onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 60_000);
  return { child, url };
}

type Api = (method: 'GET' | 'POST', path: string, body?: string) => Promise<{ status: number; json: any }>;

function client(baseUrl: string, apiKey: string): Api {
  return async (method, path, body) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'x-auth-token': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  };
}

/** A one-page template with roles Buyer and Seller, a text and a signature field each. */
async function createTemplate(api: Api): Promise<{ id: number; roles: string[]; fields: number }> {
  const area = (y: number, h = 24) => [{ x: 72, y, w: 180, h, page: 1 }];
  const { status, json } = await api(
    'POST',
    '/api/templates/pdf',
    JSON.stringify({
      name: 'Bench purchase agreement',
      documents: [{ name: 'agreement', file: (await fs.readFile(FIXTURE)).toString('base64') }],
      fields: [
        { name: 'Buyer Name', role: 'Buyer', areas: area(100) },
        { name: 'Buyer Signature', type: 'signature', role: 'Buyer', areas: area(140, 40) },
        { name: 'Seller Name', role: 'Seller', areas: area(400) },
        { name: 'Seller Signature', type: 'signature', role: 'Seller', areas: area(440, 40) },
      ],
    }),
  );
  if (status !== 200) throw new Error(`POST /api/templates/pdf answered ${status}: ${JSON.stringify(json)}`);
  return { id: json.id, roles: json.submitters.map((s: { name: string }) => s.name), fields: json.fields.length };
}

function benchRequests(templateId: number): Record<Key, Request> {
  return {
    user: { key: 'user', method: 'GET', path: '/api/user' },
    list: { key: 'list', method: 'GET', path: '/api/submissions?limit=100' },
    create: {
      key: 'create',
      method: 'POST',
      path: '/api/submissions',
      // DocuSeal's defaults: send_email true, order preserved (only the Buyer is emailed now).
      body: JSON.stringify({
        template_id: templateId,
        submitters: [
          { role: 'Buyer', email: 'buyer@example.test', name: 'Bea Buyer' },
          { role: 'Seller', email: 'seller@example.test', name: 'Sam Seller' },
        ],
      }),
    },
  };
}

/** The create answers two submitters, the first sent, the second awaiting. */
async function checkCreate(api: Api, request: Request): Promise<{ submissionId: number }> {
  const { status, json } = await api('POST', request.path, request.body);
  const statuses = Array.isArray(json) ? json.map((s: { status: string }) => s.status).join(',') : '';
  if (status !== 200 || statuses !== 'sent,awaiting')
    throw new Error(`POST /api/submissions answered ${status}: ${JSON.stringify(json)}`);
  return { submissionId: json[0].submission_id };
}

/**
 * A full page of 100, each with its two submitters.
 * @returns the size of the answer's JSON, in bytes
 */
async function checkList(api: Api, request: Request): Promise<number> {
  const { status, json } = await api('GET', request.path);
  const ok =
    status === 200 &&
    json.data.length === 100 &&
    json.pagination.count === 100 &&
    json.data.every((s: { submitters: unknown[] }) => s.submitters.length === 2);
  if (!ok) throw new Error(`GET ${request.path} answered ${status}: ${JSON.stringify(json).slice(0, 500)}`);
  return Buffer.byteLength(JSON.stringify(json));
}

function load(baseUrl: string, apiKey: string, request: Request, durationS: number, connections = CONNECTIONS) {
  return autocannon({
    url: `${baseUrl}${request.path}`,
    method: request.method,
    headers: { 'x-auth-token': apiKey, ...(request.body ? { 'content-type': 'application/json' } : {}) },
    body: request.body,
    connections,
    duration: durationS,
    timeout: 10,
  });
}

// ---------------------------------------------------------------------------------------------
// Jobs (Agenda's table, read directly)

/** Jobs running or due now, of any name. */
async function pendingJobs(sql: pg.Client, withinMs = 0): Promise<number> {
  const { rows } = await sql.query(
    `SELECT count(*)::int AS n FROM agenda.jobs
      WHERE NOT disabled AND (locked_at IS NOT NULL OR next_run_at <= now() + $1 * interval '1 millisecond')`,
    [withinMs],
  );
  return rows[0].n;
}

/** Resolves once no job is running or due (within `withinMs`); rejects after `timeoutMs`. */
async function waitForJobs(sql: pg.Client, timeoutMs: number, withinMs = 0): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while ((await pendingJobs(sql, withinMs)) > 0) {
    if (performance.now() > deadline) {
      const { rows } = await sql.query(
        `SELECT name, count(*)::int AS n, count(locked_at)::int AS locked, max(fail_count)::int AS fails,
                max(fail_reason) AS reason
           FROM agenda.jobs WHERE NOT disabled AND (locked_at IS NOT NULL OR next_run_at <= now())
          GROUP BY name ORDER BY name`,
      );
      throw new Error(`jobs still pending after ${timeoutMs} ms: ${JSON.stringify(rows)}`);
    }
    await sleep(10);
  }
}

/** Emails of the submissions created after `lastIdBefore`: one sent to each first party, none to the others. */
async function checkDelivery(sql: pg.Client, lastIdBefore: number) {
  const { rows } = await sql.query(
    `SELECT (SELECT count(*)::int FROM submissions WHERE id > $1) AS submissions,
            count(*) FILTER (WHERE s.order_index = 0 AND m.status = 'sent')::int AS first_party,
            count(*) FILTER (WHERE s.order_index <> 0)::int AS others
       FROM email_messages m JOIN submitters s ON s.id = m.submitter_id
      WHERE m.submission_id > $1 AND m.kind = 'signature_request'`,
    [lastIdBefore],
  );
  return {
    submissions: rows[0].submissions as number,
    firstPartyEmails: rows[0].first_party as number,
    otherEmails: rows[0].others as number,
  };
}

// ---------------------------------------------------------------------------------------------
// Seeding: copies of one submission made through the API

/**
 * Inserts `count` copies of submission `prototypeId` and of everything its creation and email
 * job wrote: submissions, submitters, submission_events, email_messages (the outbox) and Agenda's
 * finished job rows (kept for their unique keys, so the enqueue's key lookup sees as many rows as
 * after `count` real creates). Each copy gets new ids, slugs, uuids, its own signer addresses
 * (`buyer+<n>@…`), its dedupe and unique keys, and links with its own slugs. Every other column
 * is copied as the service wrote it (the columns are read from the catalog, so none is missed).
 */
async function seedSubmissions(sql: pg.Client, prototypeId: number, count: number) {
  const started = performance.now();
  // 14 characters from 32 random bytes, without the characters the service's slugs leave out.
  const slug = `substr(translate(encode(pg_temp.seed_random_bytes(), 'base64'), '+/=0OIl', ''), 1, 14)`;
  const shift = (column: string) => `${column} + seed.n * interval '1 millisecond'`;
  await sql.query('BEGIN');
  try {
    // 32 random bytes, without the pgcrypto extension.
    await sql.query(`CREATE FUNCTION pg_temp.seed_random_bytes() RETURNS bytea LANGUAGE sql VOLATILE AS
      $$ SELECT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex') $$`);
    await sql.query(
      `CREATE TEMP TABLE seed ON COMMIT DROP AS
      SELECT n, nextval(pg_get_serial_sequence('submissions', 'id'))::int AS submission_id
        FROM generate_series(1, $1::int) n`,
      [count],
    );
    const submissions = await copy(
      sql,
      'public',
      'submissions',
      'FROM seed, submissions p WHERE p.id = $1',
      [prototypeId],
      {
        id: 'seed.submission_id',
        slug,
        created_at: shift('p.created_at'),
        updated_at: shift('p.updated_at'),
      },
    );
    const submitters = await copy(
      sql,
      'public',
      'submitters',
      'FROM seed JOIN submitters p ON p.submission_id = $1',
      [prototypeId],
      {
        id: null,
        uuid: 'gen_random_uuid()',
        submission_id: 'seed.submission_id',
        slug,
        email: `regexp_replace(p.email, '@', '+' || seed.n || '@')`,
        sent_at: shift('p.sent_at'),
        created_at: shift('p.created_at'),
        updated_at: shift('p.updated_at'),
      },
    );
    // Which new submitter stands for which prototype submitter (same role in the same copy).
    await sql.query(
      `CREATE TEMP TABLE seed_submitters ON COMMIT DROP AS
      SELECT seed.n, seed.submission_id, p.id AS old_id, p.slug AS old_slug,
             s.id AS new_id, s.slug AS new_slug, s.email AS new_email
        FROM seed JOIN submitters s ON s.submission_id = seed.submission_id
        JOIN submitters p ON p.submission_id = $1 AND p.role_uuid = s.role_uuid`,
      [prototypeId],
    );
    const emailColumns = await columnsOf(sql, 'public', 'email_messages');
    const emails = await sql.query(
      `CREATE TEMP TABLE seed_emails ON COMMIT DROP AS
       WITH inserted AS (
         INSERT INTO email_messages (${emailColumns
           .filter((c) => c !== 'id')
           .map(quote)
           .join(', ')})
         SELECT ${selectList(
           emailColumns.filter((c) => c !== 'id'),
           {
             submission_id: 'seed.submission_id',
             submitter_id: 'seed.new_id',
             dedupe_key: `regexp_replace(p.dedupe_key, ':' || seed.old_id || ':', ':' || seed.new_id || ':')`,
             to_addresses: 'ARRAY[seed.new_email]',
             text_body: 'replace(p.text_body, seed.old_slug, seed.new_slug)',
             html_body: 'replace(p.html_body, seed.old_slug, seed.new_slug)',
             sent_at: shift('p.sent_at'),
             created_at: shift('p.created_at'),
             updated_at: shift('p.updated_at'),
           },
         )}
           FROM seed_submitters seed JOIN email_messages p ON p.submitter_id = seed.old_id
         RETURNING id, submitter_id
       )
       SELECT inserted.id AS new_id, seed.old_id AS old_submitter_id, inserted.submitter_id AS new_submitter_id
         FROM inserted JOIN seed_submitters seed ON seed.new_id = inserted.submitter_id`,
    );
    const events = await copy(
      sql,
      'public',
      'submission_events',
      `FROM seed JOIN submission_events p ON p.submission_id = $1
       LEFT JOIN seed_submitters m ON m.n = seed.n AND m.old_id = p.submitter_id
       LEFT JOIN seed_emails e ON e.new_submitter_id = m.new_id`,
      [prototypeId],
      {
        id: null,
        submission_id: 'seed.submission_id',
        submitter_id: 'm.new_id',
        data: `CASE WHEN p.data ? 'email_message_id'
                    THEN jsonb_set(p.data, '{email_message_id}', to_jsonb(e.new_id)) ELSE p.data END`,
        event_timestamp: shift('p.event_timestamp'),
        created_at: shift('p.created_at'),
      },
    );
    const jobs = await copy(
      sql,
      'agenda',
      'jobs',
      `FROM seed_submitters seed
       JOIN agenda.jobs p ON p.name = '${SEND_JOB}' AND (p.data->'payload'->>'submitterId')::int = seed.old_id`,
      [],
      {
        id: 'gen_random_uuid()',
        data: `jsonb_build_object('payload', jsonb_set(p.data->'payload', '{submitterId}', to_jsonb(seed.new_id)),
                                  'uniqueKey', regexp_replace(p.data->>'uniqueKey', '^[0-9]+', seed.new_id::text))`,
      },
    );
    await sql.query('COMMIT');
    await sql.query('ANALYZE');
    return { submissions, submitters, events, emails: emails.rowCount ?? 0, jobs, ms: performance.now() - started };
  } catch (error) {
    await sql.query('ROLLBACK');
    throw error;
  }
}

async function columnsOf(sql: pg.Client, schema: string, table: string): Promise<string[]> {
  const { rows } = await sql.query(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, table],
  );
  if (rows.length === 0) throw new Error(`no table ${schema}.${table}`);
  return rows.map((r) => r.column_name as string);
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/** `p.<column>` for each column unless overridden (an SQL expression). */
function selectList(columns: string[], overrides: Record<string, string | null>): string {
  return columns.map((c) => overrides[c] ?? `p.${quote(c)}`).join(', ');
}

/**
 * INSERT INTO <table> SELECT <every column, copied from `p` unless overridden> <from>; an
 * override of null leaves the column out (its default applies).
 * @returns rows inserted
 */
async function copy(
  sql: pg.Client,
  schema: string,
  table: string,
  from: string,
  params: unknown[],
  overrides: Record<string, string | null>,
): Promise<number> {
  const columns = (await columnsOf(sql, schema, table)).filter((c) => overrides[c] !== null);
  const result = await sql.query(
    `INSERT INTO ${quote(schema)}.${quote(table)} (${columns.map(quote).join(', ')})
     SELECT ${selectList(columns, overrides)} ${from}`,
    params,
  );
  return result.rowCount ?? 0;
}

// ---------------------------------------------------------------------------------------------
// SQL statements per request

interface VerbCounts {
  [verb: string]: number;
}

interface StatementCount {
  /**
   * Statements the request itself runs, by pool: the service's (Prisma and plain SQL) and the job
   * store's (the enqueue).
   */
  request: { service: number; jobStore: number; byVerb: VerbCounts };
  /** POST only: the jobs it enqueues, its email and its event (run by the same process after the response). */
  job?: { service: number; jobStore: number; byVerb: VerbCounts };
  samples: number;
  /** POST only: samples left out because the job started before the answer arrived. */
  overlapped?: number;
  /** Samples that agreed with the reported (most frequent) counts. */
  agreeing: number;
}

/**
 * An enqueue (matched on whitespace-collapsed SQL): Agenda's own (the unique-key lookup, the
 * insert, the notification) or the job store's one-statement insert (src/jobs/job-store.ts).
 */
const ENQUEUE = new RegExp(
  `${/^(SELECT \* FROM "jobs" WHERE name = \$1 AND data->>|INSERT INTO "jobs"|NOTIFY "agenda:jobs",)/.source}|` +
    /INSERT INTO "?jobs"? \( ?id, name, priority/.source,
);
/**
 * A save of a job's state: Agenda's (at the end of a run; also at its start in Agenda's own
 * repository) or the job store's for several jobs at once.
 */
const JOB_SAVE =
  /^UPDATE "jobs" SET locked_at = \$2, next_run_at = \$3, last_run_at|^UPDATE jobs j SET locked_at = v\.locked_at/;
const isEnqueue = (s: RecordedStatement) => s.pool === 'jobs' && ENQUEUE.test(oneLine(s.text));

/** How long jobs enqueued while statements are counted wait before running (see countStatements). */
const COUNT_JOB_DELAY_MS = 200;
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function verbOf(text: string): string {
  const word = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? '?';
  return word === 'BEGIN' || word === 'COMMIT' || word === 'ROLLBACK' ? 'BEGIN/COMMIT' : word;
}

function verbs(statements: RecordedStatement[]): VerbCounts {
  const counts: VerbCounts = {};
  for (const s of statements) counts[verbOf(s.text)] = (counts[verbOf(s.text)] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Counts the statements of each request with the proxy: every request is made alone on a quiet
 * service (previous jobs done), after three warm-up requests of each kind (prepared statements
 * and caches). A request's statements are those sent between sending it and reading its answer:
 * the service pool's, and the job store's enqueue (by its SQL). For a create, its job's
 * statements are those after the answer until no job is due or running: the service pool's
 * (the handler) and the job store's (lock, state saves, notifications). A sample whose job
 * started before the answer arrived is not counted (its statements cannot be told apart). So
 * that jobs do not start before the answer, a trigger (dropped after counting) makes every job
 * inserted while counting due COUNT_JOB_DELAY_MS later than asked: Agenda locks it when notified,
 * as usual, and runs it at that time (the handler's statements are then all after the answer).
 * Agenda's scan for due jobs runs once a second per job name whatever the load; it is measured
 * on an idle service and left out (a scan inside a sample shows as a disagreeing sample).
 */
async function countStatements(api: Api, proxy: StatementProxy, sql: pg.Client, requests: Record<Key, Request>) {
  await sql.query(`CREATE FUNCTION agenda.bench_delay_job() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN NEW.next_run_at := NEW.next_run_at + interval '${COUNT_JOB_DELAY_MS} milliseconds'; RETURN NEW; END $$`);
  await sql.query(
    `CREATE TRIGGER bench_delay_job BEFORE INSERT ON agenda.jobs
       FOR EACH ROW EXECUTE FUNCTION agenda.bench_delay_job()`,
  );
  try {
    return await countStatementsDelayed(api, proxy, sql, requests);
  } finally {
    await sql.query('DROP TRIGGER bench_delay_job ON agenda.jobs');
    await sql.query('DROP FUNCTION agenda.bench_delay_job()');
  }
}

async function countStatementsDelayed(api: Api, proxy: StatementProxy, sql: pg.Client, requests: Record<Key, Request>) {
  const jobsDone = () => waitForJobs(sql, 10_000, COUNT_JOB_DELAY_MS * 2);
  for (const request of Object.values(requests))
    for (let i = 0; i < 3; i += 1) await api(request.method, request.path, request.body);
  await jobsDone();

  proxy.statements.length = 0;
  const idleStarted = performance.now();
  await sleep(2000);
  const backgroundPerSecond =
    proxy.statements.filter((s) => s.pool === 'jobs').length / ((performance.now() - idleStarted) / 1000);

  const result = {} as Record<Key, StatementCount>;
  for (const request of [requests.user, requests.list, requests.create]) {
    const signatures = new Map<string, { count: StatementCount; seen: number }>();
    let overlapped = 0;
    let samples = 0;
    let shown = false;
    for (let attempt = 0; samples < SQL_SAMPLES && attempt < SQL_SAMPLES * 3; attempt += 1) {
      proxy.statements.length = 0;
      const sent = performance.now();
      const { status } = await api(request.method, request.path, request.body);
      const answered = performance.now();
      if (status !== 200) throw new Error(`${LABELS[request.key]} answered ${status} while counting statements`);
      if (request.key === 'create') await jobsDone();
      await sleep(30); // the last state notifications of the job
      const recorded = proxy.statements.filter((s) => s.at >= sent);
      if (SHOW_SQL && !shown) {
        shown = true;
        print(`  — ${LABELS[request.key]}, one sample (ms from sending; * = before the answer):`);
        for (const s of recorded)
          print(
            `    ${fmt(s.at - sent, 1).padStart(7)} ${s.at <= answered ? '*' : ' '} ${s.pool.padEnd(7)} ` +
              `${oneLine(s.text).slice(0, Number(process.env.BENCH_SQL_WIDTH ?? 140))}`,
          );
      }
      const inRequest = recorded.filter((s) => s.at <= answered);
      const after = recorded.filter((s) => s.at > answered);
      const requestStatements = [
        ...inRequest.filter((s) => s.pool === 'service'),
        ...inRequest.filter((s) => isEnqueue(s)),
      ];
      const count: StatementCount = {
        request: {
          service: inRequest.filter((s) => s.pool === 'service').length,
          jobStore: inRequest.filter((s) => isEnqueue(s)).length,
          byVerb: verbs(requestStatements),
        },
        samples: 0,
        agreeing: 0,
      };
      if (request.key === 'create') {
        const jobStart = recorded.find((s) => s.pool === 'jobs' && JOB_SAVE.test(oneLine(s.text)));
        if (!jobStart || jobStart.at <= answered) {
          overlapped += 1;
          continue;
        }
        const jobStatements = [
          ...after.filter((s) => s.pool === 'service'),
          ...recorded.filter((s) => s.pool === 'jobs' && !isEnqueue(s)),
        ];
        count.job = {
          service: after.filter((s) => s.pool === 'service').length,
          jobStore: recorded.filter((s) => s.pool === 'jobs' && !isEnqueue(s)).length,
          byVerb: verbs(jobStatements),
        };
      } else if (after.some((s) => s.pool === 'service')) {
        throw new Error(
          `${LABELS[request.key]}: service statements after the answer: ${after.map((s) => s.text).join(' | ')}`,
        );
      }
      samples += 1;
      const signature = JSON.stringify({ request: count.request, job: count.job });
      const entry = signatures.get(signature) ?? { count, seen: 0 };
      entry.seen += 1;
      signatures.set(signature, entry);
    }
    const best = [...signatures.values()].sort((a, b) => b.seen - a.seen)[0];
    if (!best)
      throw new Error(
        `${LABELS[request.key]}: no sample without overlap in ${SQL_SAMPLES * 3} attempts (${overlapped} overlapped)`,
      );
    result[request.key] = { ...best.count, samples, agreeing: best.seen, ...(overlapped ? { overlapped } : {}) };
  }
  return { ...result, backgroundPerSecond: round(backgroundPerSecond, 1) };
}

/** Seconds of create load run through the statement proxy. */
const LOAD_COUNT_S = 3;

/** What a statement is, for the under-load count: its first words, or a name for the job store's own. */
function statementKind(s: RecordedStatement): string {
  const text = oneLine(s.text);
  if (s.pool === 'jobs') {
    if (isEnqueue(s)) return 'job enqueue';
    if (/^UPDATE "?jobs"? SET locked_at = \$1, last_modified_by = \$5/.test(text)) return 'job lock';
    if (JOB_SAVE.test(text)) return 'job state save';
    if (/^NOTIFY/.test(text)) return 'job NOTIFY';
  }
  return `${s.pool === 'jobs' ? 'job store: ' : ''}${text.slice(0, 40)}`;
}

/**
 * Statements per create when creates come `CONNECTIONS` at a time for LOAD_COUNT_S seconds, as
 * in the load runs, and their jobs run meanwhile and after (until none is pending): every
 * statement either pool sent from the start of the load to the end of the jobs, per create,
 * by kind. The job store's scans and the fills Agenda makes when notified are in it, as they
 * are under load; the idle scan rate is small beside it (see backgroundPerSecond).
 */
async function countStatementsUnderLoad(
  baseUrl: string,
  apiKey: string,
  proxy: StatementProxy,
  sql: pg.Client,
  request: Request,
) {
  await waitForJobs(sql, 10_000);
  proxy.statements.length = 0;
  const result = await load(baseUrl, apiKey, request, LOAD_COUNT_S);
  await waitForJobs(sql, DRAIN_S * 1000);
  const recorded = [...proxy.statements];
  const creates = result.requests.total - result.non2xx - result.errors - result.timeouts;
  const kinds = new Map<string, number>();
  for (const s of recorded) kinds.set(statementKind(s), (kinds.get(statementKind(s)) ?? 0) + 1);
  const per = (n: number) => round(n / Math.max(creates, 1), 2);
  return {
    creates,
    perCreate: per(recorded.length),
    servicePerCreate: per(recorded.filter((s) => s.pool === 'service').length),
    jobStorePerCreate: per(recorded.filter((s) => s.pool === 'jobs').length),
    kinds: [...kinds].sort((a, b) => b[1] - a[1]).map(([kind, n]) => ({ kind, perCreate: per(n) })),
  };
}

function verbList(byVerb: VerbCounts): string {
  return Object.entries(byVerb)
    .map(([verb, n]) => `${n} ${verb}`)
    .join(', ');
}

function describeCount(count: StatementCount): string {
  let text =
    `${count.request.service + count.request.jobStore} in the request (${verbList(count.request.byVerb)}; ` +
    `${count.request.jobStore} on the job store)`;
  if (count.job)
    text +=
      `; its job (the email): ${count.job.service} + ${count.job.jobStore} on the job store ` +
      `(${verbList(count.job.byVerb)})`;
  return `${text}  [${count.agreeing}/${count.samples} samples agree]`;
}

function shortCount(count: StatementCount): string {
  const inRequest = count.request.service + count.request.jobStore;
  return count.job ? `${inRequest} (+ ${count.job.service + count.job.jobStore} in its job)` : String(inRequest);
}

// ---------------------------------------------------------------------------------------------
// CPU profile summary

/** A measured run, in microseconds of CLOCK_MONOTONIC (V8's profile clock on Linux, and process.hrtime's). */
interface Phase {
  key: Key;
  startUs: number;
  endUs: number;
}

/** Self time of the load instance's profile during each phase (bench/profile.ts). */
async function summarizeProfile(dir: string, phases: Phase[]) {
  const summaries = await summarizeCpuProfiles(
    dir,
    phases.map((phase) => ({ from: phase.startUs, to: phase.endUs })),
  );
  return summaries?.map((summary, i) => ({ key: phases[i]!.key, ...summary }));
}

// ---------------------------------------------------------------------------------------------
// Small helpers

runBench(main);
