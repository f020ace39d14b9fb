/**
 * `npm run bench:webhooks`: webhook delivery (issue 6, "Benchmarks"; see bench/README.md). Prints
 * a table, PASS/MISS against the targets, ratios to a baseline measured in the same run, and a
 * final `BENCH_RESULT {json}` line. Targets never fail the run; the exit code is non-zero only
 * when something could not run or a delivery was lost, duplicated or badly signed.
 *
 * 1. Signet as `npm start` runs it (dist/main.mjs; LOG_LEVEL=warn, NODE_ENV=production,
 *    CREATE_DEV_ACCOUNT=false, WEBHOOK_ALLOW_PRIVATE=true for the loopback receiver) on a fresh
 *    bench database; one template made through the API; BENCH_ENDPOINTS (5) endpoints subscribed
 *    to template.updated, each on its own path of one receiver in this process (node:http,
 *    answering 200 at once).
 * 2. Events are raised as the services raise them: createSideEffects(...).emit() from this
 *    process, one persisted dispatch-event job per event, which the service runs (dispatch →
 *    deliveries → one deliver-webhook job each → POST).
 *    - Latency: BENCH_LATENCY_EVENTS (40) events at BENCH_LATENCY_RATE (5) events/s; for every
 *      delivery, the time from the emit to its arrival at the receiver (same clock); p50/p99.
 *    - Throughput: BENCH_BURST_EVENTS (400) events emitted back to back; deliveries per second
 *      from the first emit to the last arrival.
 *    Every delivery must arrive exactly once with a valid X-Docuseal-Signature, and end
 *    `succeeded` in the database.
 * 3. Baseline, same run, same receiver: a bare node loop POSTing the same body with the same
 *    headers on kept-alive connections as Signet does (a keep-alive Agent), 20 at a time (one
 *    account's deliveries at once, WEBHOOK_ACCOUNT_CONCURRENCY) for the same number of requests:
 *    requests per second; and one at
 *    a time for the latency: p50/p99 of a round trip. The same loop on a new connection per request
 *    (as Signet did before keep-alive) is printed beside it.
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_ENDPOINTS, BENCH_LATENCY_EVENTS,
 * BENCH_LATENCY_RATE, BENCH_BURST_EVENTS, BENCH_WARMUP_EVENTS (20), BENCH_CPU_PROFILE=1 (run the
 * service with --cpu-prof and print where its time went), BENCH_STATEMENTS=1 (the service's
 * database connections go through bench/pg-statement-proxy.ts: SQL statements per delivery in the
 * burst, by pool and by text; the proxy's CPU is this process's, so throughput reads lower),
 * BENCH_ASYNC_COMMIT=1 (the bench
 * database with synchronous_commit = off: how fast the pipeline is when commits do not wait for
 * the disk), BENCH_SHOW_LOG=1 (print the service's output).
 */
import { createHmac } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createDb } from '../src/db/client.ts';
import { createSideEffects } from '../src/events/events.ts';
import { createJobQueue } from '../src/jobs/job-queue.ts';
import { createWebhookEndpoint } from '../src/webhooks/endpoints.ts';
import { createBenchDatabase, redactUrl } from './bench-database.ts';
import { cleanUpOnSignals, onCleanup, runCleanups } from './cleanup.ts';
import { startStatementProxy, type StatementProxy } from './pg-statement-proxy.ts';
import {
  buildService,
  childEnv,
  cpuMs,
  freePort,
  REPO_ROOT,
  sleep,
  spawnNode,
  stopChild,
  waitHealthy,
} from './processes.ts';
import { envNumber, fmt, passMiss, print, round } from './util.ts';
import { monotonicUs, printProfile } from './profile.ts';

const ENDPOINTS = envNumber('BENCH_ENDPOINTS', 5);
const LATENCY_EVENTS = envNumber('BENCH_LATENCY_EVENTS', 40);
const LATENCY_RATE = envNumber('BENCH_LATENCY_RATE', 5);
const BURST_EVENTS = envNumber('BENCH_BURST_EVENTS', 400);
const WARMUP_EVENTS = envNumber('BENCH_WARMUP_EVENTS', 20);
/** As many at once as one account's deliveries (WEBHOOK_ACCOUNT_CONCURRENCY's default): the bench has one account. */
const BASELINE_CONCURRENCY = 20;
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE === '1';
const ASYNC_COMMIT = process.env.BENCH_ASYNC_COMMIT === '1';
const STATEMENTS = process.env.BENCH_STATEMENTS === '1';
const SIGNET_ENV = {
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  CREATE_DEV_ACCOUNT: 'false',
  WEBHOOK_ALLOW_PRIVATE: 'true',
} as const;
/** Endpoints on the loopback receiver are added as the service allows them (WEBHOOK_ALLOW_PRIVATE above). */
const LOOPBACK_ALLOWED = { policy: { allowPrivate: true, allowedHosts: [] }, timeoutMs: 2000 };
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'documenso-letter-size.pdf');
/** How long the deliveries of a phase may take to arrive before the run counts them as lost. */
const ARRIVAL_TIMEOUT_MS = 120_000;

const TARGETS = { deliveriesPerSec: 500, p99Ms: 200 } as const;

cleanUpOnSignals();

interface Arrival {
  /** performance.now() at the end of the body. */
  at: number;
  path: string;
  body: string;
  signature: string;
}

/** The receiver: records every POST, answers 200 at once. */
async function startReceiver(): Promise<{ url: string; arrivals: Arrival[]; close: () => Promise<void> }> {
  const arrivals: Arrival[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      arrivals.push({
        at: performance.now(),
        path: req.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers['x-docuseal-signature'] ?? ''),
      });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function verify(signature: string, secret: string, body: string): boolean {
  const [timestamp, hex] = signature.split(' ')[0]!.split('.');
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex') === hex;
}

/** Kept-alive connections for the baseline, as many as it sends at once. */
const baselineAgent = new http.Agent({ keepAlive: true, maxSockets: BASELINE_CONCURRENCY });

/** One POST (on `agent`'s connections, else a new one); resolves with its round-trip time in ms. */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  agent: http.Agent | false = baselineAgent,
): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (response) => {
        response.resume();
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(performance.now() - started)
            : reject(new Error(`baseline: HTTP ${response.statusCode}`)),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Requests per second of `total` POSTs sent BASELINE_CONCURRENCY at a time. */
async function postLoop(total: number, send: () => Promise<number>): Promise<number> {
  let next = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: BASELINE_CONCURRENCY }, async () => {
      while (next < total) {
        next += 1;
        await send();
      }
    }),
  );
  return total / ((performance.now() - began) / 1000);
}

async function main(): Promise<void> {
  print('# Webhook delivery benchmark');
  print(`node ${process.version}, ${os.cpus().length} CPUs`);
  buildService();
  const database = await createBenchDatabase(onCleanup);
  print(`database: ${database.kind} (${redactUrl(database.url)})`);
  const db = createDb(database.url, { poolSize: 2 });
  onCleanup('disconnect the bench client', () => db.$disconnect());
  if (ASYNC_COMMIT) {
    // What the pipeline does when a commit does not wait for the WAL flush (new sessions of this database only).
    await db.$executeRawUnsafe(`ALTER DATABASE "${database.name}" SET synchronous_commit = off`);
    print('bench database: synchronous_commit = off (BENCH_ASYNC_COMMIT=1)');
  }
  const queue = createJobQueue({ connectionString: database.url, logger: pino({ level: 'silent' }) });
  onCleanup('close the event queue', () => queue.stop());
  const sink = createSideEffects({ db, jobs: queue });
  const receiver = await startReceiver();
  onCleanup('stop the receiver', receiver.close);

  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-webhooks-'));
  onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const signetUrl = `http://127.0.0.1:${port}`;
  let proxy: StatementProxy | undefined;
  if (STATEMENTS) {
    proxy = await startStatementProxy(database.url);
    const started = proxy;
    onCleanup('close the statement proxy', () => started.close());
  }
  const profileDir = CPU_PROFILE ? await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-webhooks-prof-')) : undefined;
  const child = spawnNode(
    'dist/main.mjs',
    childEnv({
      ...SIGNET_ENV,
      DATABASE_URL: proxy?.url ?? database.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
    }),
    profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  );
  onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, signetUrl, performance.now(), 60_000);

  const pdf = await fs.readFile(FIXTURE);
  const created = await fetch(`${signetUrl}/api/templates/pdf`, {
    method: 'POST',
    headers: { 'x-auth-token': database.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'Bench',
      documents: [{ name: 'bench', file: pdf.toString('base64') }],
      fields: [{ name: 'Name', role: 'Signer', areas: [{ x: 72, y: 72, w: 200, h: 20, page: 1 }] }],
    }),
  });
  if (created.status !== 200) throw new Error(`template: HTTP ${created.status} ${await created.text()}`);
  const template = (await created.json()) as { id: number };
  const account = await db.user.findFirstOrThrow({
    where: { email: database.user.email },
    select: { accountId: true },
  });
  const secrets = new Map<string, string>();
  for (let i = 0; i < ENDPOINTS; i += 1) {
    const { secret } = await createWebhookEndpoint(db, {
      accountId: account.accountId,
      url: `${receiver.url}/hook/${i}`,
      events: ['template.updated'],
      destination: LOOPBACK_ALLOWED,
    });
    secrets.set(`/hook/${i}`, secret);
  }
  print(`Signet ${signetUrl}; ${ENDPOINTS} endpoints on ${receiver.url}; template ${template.id}`);

  // Each event gets its own millisecond as `at`, so arrivals map back to their emit by the payload's timestamp.
  let clock = Date.now();
  const emitted = new Map<string, number>();
  const emittedWall = new Map<string, number>();
  const emit = async () => {
    clock = Math.max(clock + 1, Date.now());
    const at = new Date(clock);
    emitted.set(at.toISOString(), performance.now());
    emittedWall.set(at.toISOString(), Date.now());
    await sink.emit([{ type: 'template.updated', accountId: account.accountId, recordId: template.id, at }]);
  };
  const waitForArrivals = async (count: number) => {
    const deadline = performance.now() + ARRIVAL_TIMEOUT_MS;
    while (receiver.arrivals.length < count) {
      if (performance.now() > deadline)
        throw new Error(
          `only ${receiver.arrivals.length} of ${count} deliveries arrived within ${ARRIVAL_TIMEOUT_MS / 1000} s`,
        );
      await sleep(10);
    }
  };

  // Warm-up.
  for (let i = 0; i < WARMUP_EVENTS; i += 1) await emit();
  await waitForArrivals(WARMUP_EVENTS * ENDPOINTS);
  await sleep(500);

  // Latency at a steady rate.
  const latencyStart = receiver.arrivals.length;
  for (let i = 0; i < LATENCY_EVENTS; i += 1) {
    const tick = performance.now();
    await emit();
    await sleep(Math.max(0, 1000 / LATENCY_RATE - (performance.now() - tick)));
  }
  await waitForArrivals(latencyStart + LATENCY_EVENTS * ENDPOINTS);
  const latencyArrivals = receiver.arrivals.slice(latencyStart);
  const latenciesMs = latencyArrivals.map((a) => a.at - emitted.get(JSON.parse(a.body).timestamp)!);
  // Where the latency goes, from the attempts Signet recorded (same machine, same wall clock):
  // emit → the attempt's start (dispatch, delivery job queued and picked up), and the request itself.
  const latencyTimestamps = new Set(latencyArrivals.map((a) => JSON.parse(a.body).timestamp as string));
  const attempts = await db.webhookAttempt.findMany({
    select: { createdAt: true, durationMs: true, delivery: { select: { payload: true, createdAt: true } } },
  });
  const phase = attempts
    .map((a) => ({
      timestamp: (a.delivery.payload as { timestamp: string }).timestamp,
      dispatched: a.delivery.createdAt.getTime(),
      start: a.createdAt.getTime(),
      duration: a.durationMs,
    }))
    .filter((a) => latencyTimestamps.has(a.timestamp));
  const toStart = phase.map((a) => a.start - emittedWall.get(a.timestamp)!);
  const toDispatch = phase.map((a) => a.dispatched - emittedWall.get(a.timestamp)!);
  const sendMs = phase.map((a) => a.duration);
  await sleep(500);

  // Throughput: a burst.
  const burstStart = receiver.arrivals.length;
  const cpuBefore = await cpuMs(child.pid);
  if (proxy) proxy.statements.length = 0;
  // The profile's clock (V8's, CLOCK_MONOTONIC in µs) is process.hrtime's: the burst's window in it.
  const burstWindowUs = { from: monotonicUs(), to: Number.POSITIVE_INFINITY };
  const burstBegan = performance.now();
  for (let i = 0; i < BURST_EVENTS; i += 1) await emit();
  const emitMs = performance.now() - burstBegan;
  await waitForArrivals(burstStart + BURST_EVENTS * ENDPOINTS);
  const burstMs = receiver.arrivals.at(-1)!.at - burstBegan;
  burstWindowUs.to = monotonicUs();
  const signetCpuMs = (await cpuMs(child.pid)) - cpuBefore;
  const burstStatements = proxy ? [...proxy.statements] : [];
  const burstDeliveries = BURST_EVENTS * ENDPOINTS;
  const deliveriesPerSec = burstDeliveries / (burstMs / 1000);

  // Checks: exactly once each, signed, succeeded.
  await sleep(1000);
  const seen = new Set<string>();
  let badSignatures = 0;
  let duplicates = 0;
  for (const arrival of receiver.arrivals) {
    const key = `${arrival.path} ${JSON.parse(arrival.body).timestamp}`;
    if (seen.has(key)) duplicates += 1;
    seen.add(key);
    if (!verify(arrival.signature, secrets.get(arrival.path)!, arrival.body)) badSignatures += 1;
  }
  const expected = (WARMUP_EVENTS + LATENCY_EVENTS + BURST_EVENTS) * ENDPOINTS;
  const succeeded = await db.webhookDelivery.count({ where: { status: 'succeeded' } });
  const sample = receiver.arrivals.at(-1)!;

  // Baseline: the same requests from a bare loop.
  const target = new URL(`${receiver.url}/baseline`);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'bench-baseline',
    'x-docuseal-signature': sample.signature,
  };
  const baselineBefore = receiver.arrivals.length;
  const baselinePerSec = await postLoop(burstDeliveries, () => post(target, headers, sample.body));
  const newConnectionPerSec = await postLoop(burstDeliveries, () => post(target, headers, sample.body, false));
  const baselineLatencies: number[] = [];
  for (let i = 0; i < latencyArrivals.length; i += 1) baselineLatencies.push(await post(target, headers, sample.body));
  baselineAgent.destroy();
  if (receiver.arrivals.length - baselineBefore !== 2 * burstDeliveries + latencyArrivals.length)
    throw new Error('baseline: requests lost');

  const p50 = percentile(latenciesMs, 50);
  const p99 = percentile(latenciesMs, 99);
  const baseP50 = percentile(baselineLatencies, 50);
  const baseP99 = percentile(baselineLatencies, 99);
  print('');
  print('| measure | Signet | baseline (bare POST loop, kept-alive connections) | ratio | target | |');
  print('|---|---|---|---|---|---|');
  print(
    `| deliveries/s (burst of ${BURST_EVENTS} events × ${ENDPOINTS} endpoints) | ${fmt(deliveriesPerSec, 0)} | ` +
      `${fmt(baselinePerSec, 0)} | ${fmt(deliveriesPerSec / baselinePerSec, 2)} | ≥ ${TARGETS.deliveriesPerSec} | ` +
      `${passMiss(deliveriesPerSec >= TARGETS.deliveriesPerSec)} |`,
  );
  print(
    `| emit → receipt p50, ms (${LATENCY_EVENTS} events at ${LATENCY_RATE}/s × ${ENDPOINTS}) | ${fmt(p50, 1)} | ` +
      `${fmt(baseP50, 1)} | ${fmt(p50 / baseP50, 1)} | | |`,
  );
  print(
    `| emit → receipt p99, ms | ${fmt(p99, 1)} | ${fmt(baseP99, 1)} | ${fmt(p99 / baseP99, 1)} | ≤ ${TARGETS.p99Ms} ` +
      `| ${passMiss(p99 <= TARGETS.p99Ms)} |`,
  );
  print(`| Signet CPU per delivery in the burst, ms | ${fmt(signetCpuMs / burstDeliveries, 2)} | | | | |`);
  print('');
  print(
    `latency breakdown (steady rate): emit → deliveries written (dispatch job ran) p50 ` +
      `${fmt(percentile(toDispatch, 50), 1)} ms, p99 ${fmt(percentile(toDispatch, 99), 1)} ms`,
  );
  print(
    `  emit → attempt start p50 ${fmt(percentile(toStart, 50), 1)} ms, p99 ${fmt(percentile(toStart, 99), 1)} ms; ` +
      `the request itself p50 ${fmt(percentile(sendMs, 50), 1)} ms, p99 ${fmt(percentile(sendMs, 99), 1)} ms`,
  );
  print('');
  print(
    `baseline on a new connection per request (as Signet before keep-alive): ${fmt(newConnectionPerSec, 0)} requests/s`,
  );
  print(
    `burst: emitted in ${fmt(emitMs, 0)} ms, last arrival after ${fmt(burstMs, 0)} ms; payload ` +
      `${Buffer.byteLength(sample.body)} bytes`,
  );
  print(
    `checks: ${baselineBefore} of ${expected} deliveries arrived, ${duplicates} duplicates, ${badSignatures} bad ` +
      `signatures, ${succeeded} succeeded in the database`,
  );

  const ok = duplicates === 0 && badSignatures === 0 && succeeded === expected && baselineBefore === expected;
  print(
    `BENCH_RESULT ${JSON.stringify({
      bench: 'webhooks',
      endpoints: ENDPOINTS,
      deliveriesPerSec: round(deliveriesPerSec, 0),
      baselinePerSec: round(baselinePerSec, 0),
      baselineNewConnectionPerSec: round(newConnectionPerSec, 0),
      p50Ms: round(p50, 1),
      p99Ms: round(p99, 1),
      baselineP99Ms: round(baseP99, 2),
      cpuMsPerDelivery: round(signetCpuMs / burstDeliveries, 2),
      targets: { deliveriesPerSec: deliveriesPerSec >= TARGETS.deliveriesPerSec, p99Ms: p99 <= TARGETS.p99Ms },
      ok,
    })}`,
  );
  if (!ok) process.exitCode = 1;
  if (proxy) printStatements(burstStatements, burstDeliveries);
  if (process.env.BENCH_SHOW_LOG === '1') print(`service output (last 8 KB):\n${child.output()}`);
  if (profileDir) {
    await stopChild(child);
    await printProfile(profileDir, burstWindowUs, 'the burst');
  }
}

/**
 * SQL statements of the burst per delivery: by pool, and the
 * most frequent texts (first 100 characters, whitespace folded).
 */
function printStatements(statements: { pool: string; text: string }[], deliveries: number): void {
  const byPool = new Map<string, number>();
  const byText = new Map<string, number>();
  for (const s of statements) {
    byPool.set(s.pool, (byPool.get(s.pool) ?? 0) + 1);
    const text = `${s.pool}: ${s.text.replace(/\s+/g, ' ').trim().slice(0, 100)}`;
    byText.set(text, (byText.get(text) ?? 0) + 1);
  }
  print('');
  print(
    `SQL statements in the burst: ${fmt(statements.length / deliveries, 2)} per delivery (` +
      `${[...byPool].map(([pool, n]) => `${pool} ${fmt(n / deliveries, 2)}`).join(', ')})`,
  );
  for (const [text, n] of [...byText].sort((a, b) => b[1] - a[1]).slice(0, 25))
    print(`  ${fmt(n / deliveries, 3).padStart(6)}  ${text}`);
}

main()
  .catch((error: unknown) => {
    process.stderr.write(
      `bench:webhooks failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  })
  .finally(() => runCleanups());
