/**
 * `npx tsx bench/idempotency.ts` (issue 16, docs/idempotency.md): what an `Idempotency-Key` costs.
 * The service as `npm start` runs it (dist/main.mjs, NODE_ENV=production, mail to the outbox) on a
 * fresh bench database (bench/bench-database.ts) with a one-role template; autocannon (loopback,
 * this process) runs, each a warm-up then a measured run, in ROUNDS alternating rounds so that
 * drift on a shared machine falls on both sides:
 * - `GET /api/user` without and with the header (a GET ignores it: the two should match);
 * - `POST /api/submissions` (`send_email: false`, so no job competes for the CPU) without the
 *   header, then with a new key per request (one claim statement before the create and one that
 *   keeps the answer after it), then with one key and the same body (every request a replay).
 * Prints req/s, p50 and p99 per run (median over the rounds) and each keyed run as a ratio of its
 * run without the header, then `BENCH_RESULT {json}`. Requests without the header run no
 * statement of the feature (test/idempotency.test.ts checks the statements).
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_DURATION (s, default 5), BENCH_WARMUP
 * (s, default 1), BENCH_CONNECTIONS (default 10), BENCH_ROUNDS (default 2).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import autocannon from 'autocannon';
import { createBenchDatabase } from './bench-database.ts';
import { cleanUpOnSignals, onCleanup, runBench, runCleanups, tempDir } from './cleanup.ts';
import { buildService, childEnv, freePort, REPO_ROOT, spawnNode, stopChild, waitHealthy } from './processes.ts';
import { envNumber, fmt, median, print } from './util.ts';

const DURATION_S = envNumber('BENCH_DURATION', 5);
const WARMUP_S = envNumber('BENCH_WARMUP', 1);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const ROUNDS = envNumber('BENCH_ROUNDS', 2);
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'documenso-letter-size.pdf');

interface Run {
  label: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** The Idempotency-Key of each request: none, one for all, or a new one each. */
  key: 'none' | 'same' | 'new';
  /** The run whose figures this one is compared with. */
  baseline?: string;
}

interface Figures {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

async function main(): Promise<number> {
  cleanUpOnSignals();
  print('[setup] building dist/main.mjs, creating the bench database');
  buildService();
  const database = await createBenchDatabase(onCleanup);
  const dataDir = await tempDir('signet-bench-idempotency-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = childEnv({
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    CREATE_DEV_ACCOUNT: 'false',
    DATABASE_URL: database.url,
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

  const headers = { 'x-auth-token': database.apiKey, 'content-type': 'application/json' };
  const template = await fetch(`${url}/api/templates/pdf`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name: 'Bench NDA',
      documents: [{ name: 'nda', file: (await fs.readFile(FIXTURE)).toString('base64') }],
      fields: [{ name: 'Sign', type: 'signature', role: 'Signer', areas: [{ x: 72, y: 72, w: 150, h: 40, page: 1 }] }],
    }),
  });
  const templateId = ((await template.json()) as { id: number }).id;
  const create = JSON.stringify({
    template_id: templateId,
    send_email: false,
    submitters: [{ role: 'Signer', email: 'signer@example.test', name: 'Sam Signer' }],
  });
  const runs: Run[] = [
    { label: 'GET  /api/user', method: 'GET', path: '/api/user', key: 'none' },
    { label: 'GET  /api/user, with a key', method: 'GET', path: '/api/user', key: 'same', baseline: 'GET  /api/user' },
    { label: 'POST /api/submissions', method: 'POST', path: '/api/submissions', body: create, key: 'none' },
    {
      label: 'POST /api/submissions, new key each',
      method: 'POST',
      path: '/api/submissions',
      body: create,
      key: 'new',
      baseline: 'POST /api/submissions',
    },
    {
      label: 'POST /api/submissions, replays',
      method: 'POST',
      path: '/api/submissions',
      body: create,
      key: 'same',
      baseline: 'POST /api/submissions',
    },
  ];

  print(
    `\n[load] autocannon: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s measured, ` +
      `${ROUNDS} rounds`,
  );
  const measured = new Map<string, Figures[]>();
  let problems = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const run of runs) {
      // The replay run's key: its first request makes the answer, every other one replays it.
      const sameKey = randomUUID();
      await load(url, headers, run, WARMUP_S, sameKey);
      const result = await load(url, headers, run, DURATION_S, sameKey);
      if (result.errors + result.timeouts + result.non2xx > 0) {
        problems += 1;
        print(`  ${run.label}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx`);
      }
      const figures = { reqPerSec: result.requests.average, p50Ms: result.latency.p50, p99Ms: result.latency.p99 };
      measured.set(run.label, [...(measured.get(run.label) ?? []), figures]);
    }
  }

  const medians = new Map<string, Figures>();
  for (const [label, list] of measured) {
    medians.set(label, {
      reqPerSec: median(list.map((f) => f.reqPerSec)),
      p50Ms: median(list.map((f) => f.p50Ms)),
      p99Ms: median(list.map((f) => f.p99Ms)),
    });
  }
  print('');
  const result: Record<string, Figures & { ratio?: number }> = {};
  for (const run of runs) {
    const figures = medians.get(run.label)!;
    const base = run.baseline ? medians.get(run.baseline) : undefined;
    const ratio = base ? figures.reqPerSec / base.reqPerSec : undefined;
    result[run.label] = { ...figures, ...(ratio === undefined ? {} : { ratio: Math.round(ratio * 1000) / 1000 }) };
    print(
      `  ${run.label.padEnd(36)} ${fmt(figures.reqPerSec, 0).padStart(6)} req/s  ` +
        `p50 ${fmt(figures.p50Ms, 1).padStart(6)} ms  p99 ${fmt(figures.p99Ms, 1).padStart(6)} ms` +
        (ratio === undefined ? '' : `  × ${fmt(ratio, 3)} of ${run.baseline}`),
    );
  }
  print(`\nBENCH_RESULT ${JSON.stringify(result)}`);
  await runCleanups();
  return problems === 0 ? 0 : 1;
}

function load(baseUrl: string, headers: Record<string, string>, run: Run, durationS: number, sameKey: string) {
  const request = {
    method: run.method,
    path: run.path,
    headers: run.key === 'same' ? { ...headers, 'idempotency-key': sameKey } : headers,
    body: run.body,
  };
  return autocannon({
    url: baseUrl,
    connections: CONNECTIONS,
    duration: durationS,
    timeout: 10,
    requests: [
      run.key === 'new'
        ? {
            ...request,
            setupRequest: (next) => ({ ...next, headers: { ...next.headers, 'idempotency-key': randomUUID() } }),
          }
        : request,
    ],
  });
}

runBench(main);
