/**
 * `npm run bench:bulk`: bulk send (issue 16; see bench/README.md). Prints a table, PASS/MISS
 * against the target, and a final `BENCH_RESULT {json}` line. The target never fails the run; the
 * exit code is non-zero only when something could not run or answered wrongly.
 *
 * The service runs as `npm start` runs it (dist/main.mjs; LOG_LEVEL=warn, NODE_ENV=production,
 * CREATE_DEV_ACCOUNT=false, no mail provider) on a fresh bench database (bench/bench-database.ts),
 * with a one-page template of two roles (Buyer, Seller: a text and a signature field each).
 *
 * 1. **Baseline: single creates**, measured in the same run: `POST /api/submissions` with a Buyer
 *    and a Seller, by autocannon on BENCH_CONNECTIONS connections for BENCH_DURATION s (after a
 *    BENCH_WARMUP s warm-up), as bench/submissions.ts measures creates; and, for information, one at
 *    a time for 3 s.
 * 2. **Bulk send of BENCH_BULK_ROWS (10,000) rows**: `POST /api/templates/{id}/submissions/bulk`
 *    with a CSV of that many rows (`Buyer - Email, Buyer - Name, Seller - Email, Seller - Name`),
 *    timed from sending it until the bulk send's status is `completed` (read in SQL every 20 ms, so
 *    polling costs the service nothing): rows per second, the 202's latency, and the service's CPU
 *    per row. Every row must have become one submission.
 *
 * Both send no email (`send_email: false`): the figure is the creating, not the mail provider (a
 * bulk send's invitations leave later, at its rate). BENCH_ROUNDS rounds (default 2), the order
 * alternating; the medians are compared. Target: bulk rows/s ≥ 1× the single-create rate.
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_DURATION (s, default 8), BENCH_WARMUP (s,
 * default 2), BENCH_CONNECTIONS (default 10), BENCH_BULK_ROWS (default 10000), BENCH_ROUNDS (default 2).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { createBenchDatabase, redactUrl } from './bench-database.ts';
import { cleanUpOnSignals, onCleanup, runBench, runCleanups, tempDir } from './cleanup.ts';
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
import { envNumber, fmt, median, passMiss, print, round } from './util.ts';

const DURATION_S = envNumber('BENCH_DURATION', 8);
const WARMUP_S = envNumber('BENCH_WARMUP', 2);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const ROWS = envNumber('BENCH_BULK_ROWS', 10_000);
const ROUNDS = envNumber('BENCH_ROUNDS', 2);
const SEQUENTIAL_S = 3;
const TARGET_RATIO = 1;
const SIGNET_ENV = { LOG_LEVEL: 'warn', NODE_ENV: 'production', CREATE_DEV_ACCOUNT: 'false' } as const;
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'documenso-letter-size.pdf');

cleanUpOnSignals();

type Api = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<{ status: number; json: any }>;

function client(baseUrl: string, apiKey: string): Api {
  return async (method, p, body) => {
    const response = await fetch(`${baseUrl}${p}`, {
      method,
      headers: { 'x-auth-token': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  };
}

interface SingleResult {
  perSecond: number;
  p99Ms: number;
  sequentialPerSecond: number;
}

interface BulkResult {
  rowsPerSecond: number;
  acceptedMs: number;
  seconds: number;
  cpuMsPerRow: number;
}

async function main(): Promise<number> {
  const started = performance.now();
  print(
    `Signet bulk-send benchmark — node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}-${os.arch()}`,
  );
  print('\n[setup] bench database …');
  const database = await createBenchDatabase(onCleanup);
  print(
    `  ${database.kind === 'external' ? 'DATABASE_URL server' : 'embedded PostgreSQL'}: ${redactUrl(database.url)}`,
  );
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  onCleanup('close the bench SQL client', () => sql.end());
  const dataDir = await tempDir('signet-bench-bulk-');
  buildService();
  const service = await startSignet(database.url, dataDir);
  const api = client(service.url, database.apiKey);
  print(`  Signet pid ${service.child.pid} (dist/main.mjs as npm start runs it, outbox mail)`);

  const area = (y: number, h = 24) => [{ x: 72, y, w: 180, h, page: 1 }];
  const template = await api('POST', '/api/templates/pdf', {
    name: 'Bench bulk agreement',
    documents: [{ name: 'agreement', file: (await fs.readFile(FIXTURE)).toString('base64') }],
    fields: [
      { name: 'Buyer Name', role: 'Buyer', areas: area(100) },
      { name: 'Buyer Signature', type: 'signature', role: 'Buyer', areas: area(140, 40) },
      { name: 'Seller Name', role: 'Seller', areas: area(400) },
      { name: 'Seller Signature', type: 'signature', role: 'Seller', areas: area(440, 40) },
    ],
  });
  if (template.status !== 200) throw new Error(`template: ${template.status} ${JSON.stringify(template.json)}`);
  const templateId = template.json.id as number;
  print(`  template ${templateId} (roles Buyer, Seller; 4 fields)`);

  const singleBody = {
    template_id: templateId,
    send_email: false,
    submitters: [
      { role: 'Buyer', email: 'buyer@bench.test', name: 'Buyer' },
      { role: 'Seller', email: 'seller@bench.test', name: 'Seller' },
    ],
  };
  const check = await api('POST', '/api/submissions', singleBody);
  if (check.status !== 200) throw new Error(`POST /api/submissions: ${check.status} ${JSON.stringify(check.json)}`);

  const singles: SingleResult[] = [];
  const bulks: BulkResult[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? ['single', 'bulk'] : ['bulk', 'single'];
    for (const step of order) {
      if (step === 'single') {
        print(
          `\n[round ${round + 1}] single creates: ${WARMUP_S} s warm-up, ${DURATION_S} s on ${CONNECTIONS} connections`,
        );
        const result = await measureSingles(service.url, database.apiKey, api, singleBody);
        singles.push(result);
        print(
          `  ${fmt(result.perSecond, 0)} creates/s (p99 ${result.p99Ms} ms); one at a time ` +
            `${fmt(result.sequentialPerSecond, 0)}/s`,
        );
      } else {
        print(`\n[round ${round + 1}] bulk send of ${ROWS} rows`);
        const result = await measureBulk(api, sql, service.child, templateId, round);
        bulks.push(result);
        print(
          `  ${fmt(result.rowsPerSecond, 0)} rows/s (${fmt(result.seconds, 2)} s; 202 after ${result.acceptedMs} ms; ` +
            `${fmt(result.cpuMsPerRow, 3)} ms of service CPU per row)`,
        );
      }
    }
  }

  const single = median(singles.map((s) => s.perSecond));
  const sequential = median(singles.map((s) => s.sequentialPerSecond));
  const bulk = median(bulks.map((b) => b.rowsPerSecond));
  const ratio = bulk / single;
  print('\n| | median |');
  print('|---|---|');
  print(`| single creates, ${CONNECTIONS} connections (baseline) | ${fmt(single, 0)} creates/s |`);
  print(`| single creates, one at a time | ${fmt(sequential, 0)} creates/s |`);
  print(`| bulk send, ${ROWS} rows | ${fmt(bulk, 0)} rows/s |`);
  print(`| bulk / single (target ≥ ${TARGET_RATIO}×) | ${fmt(ratio, 2)}× ${passMiss(ratio >= TARGET_RATIO)} |`);
  print(`| bulk / one at a time | ${fmt(bulk / sequential, 2)}× |`);
  print(`\ntotal ${fmt((performance.now() - started) / 1000, 1)} s`);
  print(
    `BENCH_RESULT ${JSON.stringify({
      rows: ROWS,
      rounds: ROUNDS,
      singleCreatesPerSecond: round(single, 1),
      sequentialCreatesPerSecond: round(sequential, 1),
      bulkRowsPerSecond: round(bulk, 1),
      bulkToSingle: round(ratio, 3),
      bulkToSequential: round(bulk / sequential, 3),
      bulkAcceptedMs: median(bulks.map((b) => b.acceptedMs)),
      bulkCpuMsPerRow: round(median(bulks.map((b) => b.cpuMsPerRow)), 4),
      singles,
      bulks,
      pass: ratio >= TARGET_RATIO,
    })}`,
  );
  await runCleanups();
  return 0;
}

async function startSignet(databaseUrl: string, dataDir: string): Promise<{ child: NodeChild; url: string }> {
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
  const child = spawnNode('dist/main.mjs', env);
  onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 60_000);
  return { child, url };
}

async function measureSingles(baseUrl: string, apiKey: string, api: Api, body: unknown): Promise<SingleResult> {
  const load = (duration: number) =>
    autocannon({
      url: `${baseUrl}/api/submissions`,
      method: 'POST',
      headers: { 'x-auth-token': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      connections: CONNECTIONS,
      duration,
      timeout: 10,
    });
  await load(WARMUP_S);
  const result = await load(DURATION_S);
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`single creates: ${failed} of ${result.requests.total} failed`);
  let sequential = 0;
  const until = performance.now() + SEQUENTIAL_S * 1000;
  while (performance.now() < until) {
    const answer = await api('POST', '/api/submissions', body);
    if (answer.status !== 200) throw new Error(`POST /api/submissions: ${answer.status}`);
    sequential += 1;
  }
  return {
    perSecond: result.requests.total / DURATION_S,
    p99Ms: result.latency.p99,
    sequentialPerSecond: sequential / SEQUENTIAL_S,
  };
}

async function measureBulk(
  api: Api,
  sql: pg.Client,
  child: NodeChild,
  templateId: number,
  run: number,
): Promise<BulkResult> {
  const lines = ['Buyer - Email,Buyer - Name,Seller - Email,Seller - Name'];
  for (let i = 1; i <= ROWS; i += 1)
    lines.push(`buyer${run}-${i}@bench.test,Buyer ${i},seller${run}-${i}@bench.test,Seller ${i}`);
  const body = { csv: lines.join('\n'), send_email: false };
  const cpuBefore = await cpuMs(child.pid);
  const startedAt = performance.now();
  const accepted = await api('POST', `/api/templates/${templateId}/submissions/bulk`, body);
  const acceptedMs = Math.round(performance.now() - startedAt);
  if (accepted.status !== 202) throw new Error(`bulk send: ${accepted.status} ${JSON.stringify(accepted.json)}`);
  const id = accepted.json.id as number;
  const deadline = performance.now() + 600_000;
  for (;;) {
    const { rows } = await sql.query('SELECT status, created_count, rejected_count FROM bulk_sends WHERE id = $1', [
      id,
    ]);
    const row = rows[0] as { status: string; created_count: number; rejected_count: number };
    if (row.status === 'completed') {
      if (row.created_count !== ROWS || row.rejected_count !== 0)
        throw new Error(`bulk send ${id}: ${row.created_count} created, ${row.rejected_count} rejected of ${ROWS}`);
      break;
    }
    if (row.status === 'failed') throw new Error(`bulk send ${id} failed`);
    if (performance.now() > deadline) throw new Error(`bulk send ${id} not completed in 600 s: ${JSON.stringify(row)}`);
    await sleep(20);
  }
  const seconds = (performance.now() - startedAt) / 1000;
  const cpu = (await cpuMs(child.pid)) - cpuBefore;
  const { rows } = await sql.query(
    'SELECT count(DISTINCT r.submission_id)::int AS n FROM bulk_send_rows r ' +
      'JOIN submissions s ON s.id = r.submission_id WHERE r.bulk_send_id = $1',
    [id],
  );
  if (rows[0].n !== ROWS) throw new Error(`bulk send ${id}: ${rows[0].n} submissions for ${ROWS} rows`);
  return { rowsPerSecond: ROWS / seconds, acceptedMs, seconds: round(seconds, 3), cpuMsPerRow: cpu / ROWS };
}

runBench(main);
