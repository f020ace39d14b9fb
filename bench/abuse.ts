/**
 * `npm run bench:abuse`: hostile requests during a read load (issue 12, "Bounded cost per request").
 *
 * The service runs as `npm start` runs it (dist/main.mjs, NODE_ENV=production) on a fresh bench
 * database. Three phases of the same length, each with the same read load (autocannon, GET
 * /api/submissions?limit=10 with a key) and a /health probe every 20 ms:
 *
 * 1. **quiet**: the read load alone — the baseline;
 * 2. **attacked**: the read load while an attacker sends, back to back, every hostile request of the
 *    issue's findings: GraphQL with 1,500 aliases (of `__typename`, of introspection fields) and a
 *    3,000-deep query, all without a key; a 3 MB text value through completeSigningForm and through
 *    REST `values`; a `(a+)+$` pattern met by a 35-character value; a DOCX zip bomb; a truncated
 *    PDF; a junk image sent with `completed: true`; a body over MAX_BODY_SIZE_MB;
 * 3. **mixed**: the read load with creates, one completion and one oversized request beside it.
 *
 * Printed: the read p99 of each phase and its ratio to the quiet one (target: attacked ≤ 3× quiet),
 * the /health p99 of each phase (target ≤ 100 ms), and each hostile request's status and time
 * (each must be refused: a 4xx, or a GraphQL error of the request's own fault such as VALIDATION; never a 500). Like
 * the other benchmarks, targets print PASS/MISS and do not fail the run; the last line is `BENCH_RESULT {json}`.
 *
 * The read load and the probe run in the bench process; the attacker (and the mixed phase's
 * traffic) in a process of its own, as a real attacker would, so that its own work (writing 51 MB
 * bodies, 3 MB strings) does not delay the reads it is measured against.
 *
 * Env: BENCH_ABUSE_DURATION (seconds per phase, default 10), BENCH_CONNECTIONS (default 10),
 * BENCH_CPU_PROFILE=1 (the service under --cpu-prof; where its time went in the attack and in each issue 23 case),
 * BENCH_ABUSE_ONLY (a regular expression: only the hostile requests whose name matches, to see
 * which one costs what), DATABASE_URL (server for the bench database; otherwise an embedded
 * PostgreSQL).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createBenchDatabase, redactUrl } from './bench-database.ts';
import { onCleanup, runCleanups } from './cleanup.ts';
import {
  buildService,
  childEnv,
  freePort,
  rssMb,
  sleep,
  spawnNode,
  stopChild,
  waitHealthy,
  type NodeChild,
} from './processes.ts';
import { envNumber, fmt, passMiss, print } from './util.ts';
import { monotonicUs, printProfile } from './profile.ts';
import { runWorkerOrBench, startWorker, type WorkerHandler } from './workers.ts';
import { type CaseOutcome, type Round2Case, type Round2Target, round2Cases } from './abuse-round-2.ts';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb } from '../src/db/client.ts';
// The bomb is the one the DOCX tests refuse (test/documents-validation.test.ts): one builder of lying archives.
import { zipBombDocx } from '../test/helpers/zip-archives.ts';

const DURATION_S = envNumber('BENCH_ABUSE_DURATION', 10);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const FIXTURE = new URL('../../shared/fixtures/pdf/documenso-letter-size.pdf', import.meta.url);
const TRUNCATED_SOURCE = new URL('../../shared/fixtures/pdf/pdfjs-tracemonkey.pdf', import.meta.url);
const SIGNET_ENV = {
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  CREATE_DEV_ACCOUNT: 'false',
  MAX_BODY_SIZE_MB: '50',
  // Issue 23's webhook case: receivers on loopback; a failed attempt's retry an hour later (none during the run).
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_BASE_MS: '3600000',
};
/** A hostile request gives up after this long (a stalled service would otherwise stall the bench). */
const HOSTILE_TIMEOUT_MS = 30_000;
/** Set in the attacker process (bench/workers.ts). */
const WORKER_ENV = 'BENCH_ABUSE_WORKER';

type Api = (
  method: string,
  path: string,
  body?: unknown,
  options?: { key?: string | null; raw?: string | Uint8Array<ArrayBuffer>; contentType?: string },
) => Promise<{ status: number; text: string; ms: number }>;

function client(baseUrl: string, apiKey: string): Api {
  return async (method, p, body, options = {}) => {
    const key = options.key === undefined ? apiKey : options.key;
    const started = performance.now();
    try {
      const response = await fetch(`${baseUrl}${p}`, {
        method,
        headers: {
          ...(key ? { 'x-auth-token': key } : {}),
          ...(body !== undefined || options.raw ? { 'content-type': options.contentType ?? 'application/json' } : {}),
        },
        body: options.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
        signal: AbortSignal.timeout(HOSTILE_TIMEOUT_MS),
      });
      const text = await response.text();
      return { status: response.status, text, ms: performance.now() - started };
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      return {
        status: 0,
        text:
          `${String((error as Error).message ?? error)}` +
          `${cause ? ` cause: ${cause.code ?? ''} ${cause.message ?? ''}` : ''}`,
        ms: performance.now() - started,
      };
    }
  };
}

/** Latency samples (ms) of GET /health every 20 ms until stopped. */
function probeHealth(baseUrl: string): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const response = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(10_000) });
        await response.text();
      } catch {
        // a timeout counts as its time
      }
      samples.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

function p99(samples: number[]): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

interface PhaseResult {
  readReqPerSec: number;
  readP99Ms: number;
  readErrors: number;
  healthP99Ms: number;
  /** The slowest /health answer of the phase (issue 23: under 1 s whatever is sent). */
  healthMaxMs: number;
  healthSamples: number;
}

async function phase<T>(
  baseUrl: string,
  apiKey: string,
  beside: () => Promise<T>,
): Promise<PhaseResult & { beside: T }> {
  const health = probeHealth(baseUrl);
  const side = beside();
  const result = await autocannon({
    url: `${baseUrl}/api/submissions?limit=10`,
    headers: { 'x-auth-token': apiKey },
    connections: CONNECTIONS,
    duration: DURATION_S,
    timeout: 30,
  });
  const besideResult = await side;
  const samples = await health.stop();
  return {
    readReqPerSec: result.requests.average,
    readP99Ms: result.latency.p99,
    readErrors: result.errors + result.timeouts + (result.non2xx ?? 0),
    healthP99Ms: p99(samples),
    healthMaxMs: samples.length ? Math.max(...samples) : Number.NaN,
    healthSamples: samples.length,
    beside: besideResult,
  };
}

/** What the attacker process needs to know of the service under test. */
interface Target extends Round2Target {
  /** Signing-form slugs of pending submitters. */
  slugs: string[];
}

/**
 * A request to the attacker process: send `phase`'s requests for `durationMs`, then answer.
 * `cases` answers the names of issue 23's cases (bench/abuse-round-2.ts); `case` sends the one
 * named `caseName` back to back.
 */
interface SideRequest {
  phase: 'attack' | 'mixed' | 'cases' | 'case';
  target: Target;
  durationMs: number;
  /** BENCH_ABUSE_ONLY: only the hostile requests (and cases) whose name this regular expression matches. */
  only?: string;
  caseName?: string;
}

/** What the attacker saw of one case's runs during its phase. */
interface CaseRuns {
  runs: number;
  labels: Record<string, number>;
  slowestMs: number;
  allHandled: boolean;
}

type Outcomes = Record<string, { statuses: Record<string, number>; maxMs: number; runs: number }>;

/**
 * "422", or for a GraphQL answer "200 VALIDATION" (its first error's code); "no answer" for none.
 * Refused = a 4xx, or a GraphQL error that is the request's fault (not INTERNAL_SERVER_ERROR).
 */
function outcomeOf(result: { status: number; text: string }): { label: string; refused: boolean } {
  if (result.status === 0)
    return {
      label: `no answer (${(result.text.match(/cause: ([^\n]*)/)?.[1] ?? result.text).slice(0, 80)})`,
      refused: false,
    };
  if (result.status >= 400) return { label: String(result.status), refused: result.status < 500 };
  let code: string | undefined;
  try {
    code = JSON.parse(result.text).errors?.[0]?.extensions?.code;
  } catch {
    // not JSON
  }
  return {
    label: code ? `${result.status} ${code}` : String(result.status),
    refused: Boolean(code) && code !== 'INTERNAL_SERVER_ERROR',
  };
}

/**
 * The attacker, in its own process (bench/workers.ts) as a real one would be: the bench process
 * runs the read load and the /health probe, and an attacker sharing their event loop would slow
 * them by its own work (writing 51 MB bodies, 3 MB strings) rather than by the service's.
 */
async function createAttacker(): Promise<WorkerHandler<SideRequest>> {
  let prepared: { target: Target; hostile: Hostile[]; mixed: (until: () => boolean) => Promise<void> } | undefined;
  let round2: Awaited<ReturnType<typeof round2Cases>> | undefined;
  return {
    async run(request) {
      if (request.phase === 'cases' || request.phase === 'case') {
        round2 ??= await round2Cases(request.target, (await fs.readFile(FIXTURE)).toString('base64'));
        const only = request.only ? new RegExp(request.only, 'i') : undefined;
        if (request.phase === 'cases')
          return round2.cases.map((c) => c.name).filter((name) => !only || only.test(name));
        const chosen = round2.cases.find((c) => c.name === request.caseName);
        if (!chosen) throw new Error(`no case named ${request.caseName}`);
        return runCase(chosen, request.durationMs);
      }
      if (prepared?.target.url !== request.target.url)
        prepared = { target: request.target, ...(await prepareRequests(request.target)) };
      const until = (
        (end) => () =>
          performance.now() >= end
      )(performance.now() + request.durationMs);
      if (request.phase === 'mixed') {
        await prepared.mixed(until);
        return { outcomes: {}, allRefused: true };
      }
      const only = request.only ? new RegExp(request.only, 'i') : undefined;
      const hostile = only ? prepared.hostile.filter((h) => only.test(h.name)) : prepared.hostile;
      const outcomes: Outcomes = {};
      let allRefused = true;
      while (!until()) {
        for (const entry of hostile) {
          if (until()) break;
          const result = await entry.run();
          const outcome = outcomeOf(result);
          const closed = entry.closesConnection && /EPIPE|ECONNRESET/.test(result.text);
          if (!outcome.refused && !closed) allRefused = false;
          const seen = (outcomes[entry.name] ??= { statuses: {}, maxMs: 0, runs: 0 });
          seen.statuses[outcome.label] = (seen.statuses[outcome.label] ?? 0) + 1;
          seen.maxMs = Math.max(seen.maxMs, result.ms);
          seen.runs += 1;
        }
      }
      return { outcomes, allRefused, names: hostile.map((h) => h.name) };
    },
    async close() {
      await round2?.close();
    },
  };
}

/**
 * Sends one of issue 23's cases back to back for `durationMs` (at most its `rounds` times, then
 * waits out the phase), and gathers its outcomes.
 */
async function runCase(chosen: Round2Case, durationMs: number): Promise<CaseRuns> {
  const end = performance.now() + durationMs;
  const seen: CaseRuns = { runs: 0, labels: {}, slowestMs: 0, allHandled: true };
  do {
    let outcome: CaseOutcome;
    try {
      outcome = await chosen.run();
    } catch (error) {
      outcome = { label: `failed: ${String((error as Error).message ?? error).slice(0, 80)}`, handled: false, ms: 0 };
    }
    seen.runs += 1;
    seen.labels[outcome.label] = (seen.labels[outcome.label] ?? 0) + 1;
    seen.slowestMs = Math.max(seen.slowestMs, outcome.ms);
    if (!outcome.handled) seen.allHandled = false;
  } while (seen.runs < (chosen.rounds ?? Number.POSITIVE_INFINITY) && performance.now() < end);
  const left = end - performance.now();
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  return seen;
}

interface Hostile {
  name: string;
  run: () => Promise<{ status: number; text: string; ms: number }>;
  /**
   * The service may refuse by closing the connection: Fastify answers a Content-Length over the
   * limit with 413 and closes at once instead of reading the rest (RFC 9110 §15.5.14), and a client
   * still writing the body may then see EPIPE / ECONNRESET instead of the 413 (curl shows the 413).
   */
  closesConnection?: boolean;
}

/** The hostile requests of issue 12's findings, and the mixed phase's traffic, against `target`. */
async function prepareRequests({
  url,
  apiKey,
  templateId,
  slugs,
}: Target): Promise<{ hostile: Hostile[]; mixed: (until: () => boolean) => Promise<void> }> {
  const api = client(url, apiKey);
  const bomb = await zipBombDocx();
  // Cut in the middle: its cross-reference table and trailer are gone (the 1 MB, 14-page fixture).
  const tracemonkey = await fs.readFile(TRUNCATED_SOURCE);
  const truncatedPdf = tracemonkey.subarray(0, tracemonkey.length >> 1).toString('base64');
  // Bodies are serialized once here: the bench shares the two cores with the service, and what
  // is timed should be the service's cost, not the attacker's JSON.stringify of 3 MB each time.
  const bigJson = JSON.stringify('x'.repeat(3 * 1024 * 1024));
  const overLimit = new Uint8Array(51 * 1024 * 1024).fill(0x61);

  let slugIndex = 0;
  const nextSlug = () => slugs[slugIndex++ % slugs.length]!;
  const graphqlAnon = (query: string, variables?: unknown) =>
    api('POST', '/graphql', { query, variables }, { key: null });
  const postJson = (p: string, text: string, key?: string | null) => api('POST', p, undefined, { raw: text, key });
  const completeForm = JSON.stringify(
    'mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { slug } }',
  );
  const aliases = JSON.stringify({
    query: `{ ${Array.from({ length: 1500 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
  });
  const schemaAliases = Array.from({ length: 1500 }, (_, i) => `a${i}: __schema { types { name fields { name } } }`);
  const introspection = JSON.stringify({ query: `{ ${schemaAliases.join(' ')} }` });
  const deep = JSON.stringify({ query: `{ ${'viewer { '.repeat(3000)}${'}'.repeat(3000)} }` });
  const restBig =
    `{"template_id":${templateId}` +
    `,"send_email":false,"submitters":[{"role":"Signer","email":"big@abuse.test","values":{"Note":${bigJson}}}]}`;
  const docxBomb = JSON.stringify({ name: 'bomb', documents: [{ name: 'bomb.docx', file: bomb.toString('base64') }] });
  const brokenPdf = JSON.stringify({ name: 'broken', documents: [{ name: 'broken.pdf', file: truncatedPdf }] });
  const junkImage = JSON.stringify({
    template_id: templateId,
    send_email: false,
    submitters: [
      {
        role: 'Signer',
        email: 'junk@abuse.test',
        completed: true,
        values: {
          Code: 'aaa',
          Stamp: `data:image/png;base64,${Buffer.from('not an image at all').toString('base64')}`,
        },
      },
    ],
  });
  const hostile: Hostile[] = [
    { name: 'GraphQL, 1,500 aliases of __typename, no key', run: () => postJson('/graphql', aliases, null) },
    { name: 'GraphQL, 1,500 introspection aliases, no key', run: () => postJson('/graphql', introspection, null) },
    { name: 'GraphQL, 3,000-deep query, no key', run: () => postJson('/graphql', deep, null) },
    {
      name: 'completeSigningForm with a 3 MB value',
      run: () =>
        postJson(
          '/graphql',
          `{"query":${completeForm},"variables":{"slug":${JSON.stringify(nextSlug())},"values":{"Note":${bigJson}}}}`,
          null,
        ),
    },
    { name: 'REST create with a 3 MB value', run: () => postJson('/api/submissions', restBig) },
    {
      name: 'completeSigningForm, (a+)+$ against 35 characters',
      run: () => graphqlAnon(JSON.parse(completeForm), { slug: nextSlug(), values: { Code: `${'a'.repeat(35)}b` } }),
    },
    { name: 'DOCX zip bomb', run: () => postJson('/api/templates/docx', docxBomb) },
    { name: 'truncated PDF', run: () => postJson('/api/templates/pdf', brokenPdf) },
    { name: 'junk image with completed: true', run: () => postJson('/api/submissions', junkImage) },
    {
      name: 'body over MAX_BODY_SIZE_MB',
      run: () => api('POST', '/api/submissions', undefined, { raw: overLimit }),
      closesConnection: true,
    },
  ];
  const mixed = async (until: () => boolean) => {
    let completed = false;
    let oversized = false;
    while (!until()) {
      await api('POST', '/api/submissions', {
        template_id: templateId,
        send_email: false,
        submitters: [{ role: 'Signer', email: 'mixed@abuse.test' }],
      });
      if (!completed) {
        completed = true;
        await graphqlAnon(
          'mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { slug } }',
          { slug: nextSlug(), values: { Code: 'aaa' } },
        );
      }
      if (!oversized) {
        oversized = true;
        await api('POST', '/api/submissions', undefined, { raw: overLimit });
      }
    }
  };
  return { hostile, mixed };
}

async function main(): Promise<number> {
  print(
    `Signet abuse benchmark — node ${process.version}, ${os.cpus().length} CPUs; ${DURATION_S} s per phase, ` +
      `${CONNECTIONS} read connections`,
  );
  const database = await createBenchDatabase(onCleanup);
  print(
    `  ${database.kind === 'external' ? 'DATABASE_URL server' : 'embedded PostgreSQL'}: ${redactUrl(database.url)}`,
  );
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-abuse-'));
  onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
  buildService();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = childEnv({
    ...SIGNET_ENV,
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
  });
  for (const name of ['SMTP_URL', 'SENDGRID_API_KEY', 'TWILIO_ACCOUNT_SID', 'JOBS_MONGODB_URL']) delete env[name];
  // BENCH_CPU_PROFILE=1: the service runs with --cpu-prof; where its time went under attack is printed.
  const profileDir =
    process.env.BENCH_CPU_PROFILE === '1'
      ? await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-abuse-prof-'))
      : undefined;
  const child: NodeChild = spawnNode(
    'dist/main.mjs',
    env,
    profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  );
  onCleanup(`stop Signet (pid ${child.pid})`, async () => void (await stopChild(child)));
  await waitHealthy(child, url, performance.now(), 60_000);
  const api = client(url, database.apiKey);

  // Setup: a template whose text field has a backtracking pattern, submissions to read and to sign.
  const pdf = (await fs.readFile(FIXTURE)).toString('base64');
  const template = await api('POST', '/api/templates/pdf', {
    name: 'Abuse form',
    documents: [{ name: 'form', file: pdf }],
    fields: [
      {
        name: 'Code',
        type: 'text',
        role: 'Signer',
        validation: { pattern: '(a+)+$' },
        areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }],
      },
      {
        name: 'Note',
        type: 'text',
        role: 'Signer',
        required: false,
        areas: [{ x: 72, y: 120, w: 200, h: 24, page: 1 }],
      },
      {
        name: 'Stamp',
        type: 'image',
        role: 'Signer',
        required: false,
        areas: [{ x: 72, y: 200, w: 100, h: 50, page: 1 }],
      },
    ],
  });
  if (template.status !== 200) {
    print(
      `  template with the pattern (a+)+$ refused (${template.status}: ` +
        `${template.text.slice(0, 200)}); using one without it`,
    );
  }
  const templateId =
    template.status === 200
      ? JSON.parse(template.text).id
      : await (async () => {
          const plain = await api('POST', '/api/templates/pdf', {
            name: 'Abuse form',
            documents: [{ name: 'form', file: pdf }],
            fields: [
              { name: 'Code', type: 'text', role: 'Signer', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] },
              {
                name: 'Note',
                type: 'text',
                role: 'Signer',
                required: false,
                areas: [{ x: 72, y: 120, w: 200, h: 24, page: 1 }],
              },
              {
                name: 'Stamp',
                type: 'image',
                role: 'Signer',
                required: false,
                areas: [{ x: 72, y: 200, w: 100, h: 50, page: 1 }],
              },
            ],
          });
          if (plain.status !== 200) throw new Error(`POST /api/templates/pdf: ${plain.status} ${plain.text}`);
          return JSON.parse(plain.text).id as number;
        })();
  const slugs: string[] = [];
  for (let i = 0; i < 40; i += 1) {
    const created = await api('POST', '/api/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: `s${i}@abuse.test` }],
    });
    if (created.status !== 200) throw new Error(`POST /api/submissions: ${created.status} ${created.text}`);
    slugs.push(new URL(JSON.parse(created.text)[0].embed_src).pathname.split('/').pop()!);
  }
  print(`  template ${templateId}, 40 submissions; the attacker runs in its own process`);
  const attacker = await startWorker<SideRequest>('bench/abuse.ts', WORKER_ENV, 'attacker', process.env);
  // Issue 23's cases: a read-only key of the bench account, and two more accounts (A sends webhooks
  // to slow receivers; B's must not wait for them).
  const readOnly = await api('POST', '/graphql', {
    query: 'mutation { createApiKey(input: {name: "read-only", scopes: ["read"]}) { token } }',
  });
  const readOnlyKey = JSON.parse(readOnly.text).data?.createApiKey?.token;
  if (!readOnlyKey) throw new Error(`createApiKey: ${readOnly.status} ${readOnly.text}`);
  const db = createDb(database.url, { poolSize: 1 });
  const attackerAccount = await createAccount(db, { name: 'Attacker', email: 'a@abuse.test' });
  const victimAccount = await createAccount(db, { name: 'Victim', email: 'b@abuse.test' });
  await db.$disconnect();
  const target: Target = {
    url,
    apiKey: database.apiKey,
    readOnlyKey,
    templateId,
    slugs,
    attackerKey: attackerAccount.apiKey,
    victimKey: victimAccount.apiKey,
  };
  const side = (phaseName: SideRequest['phase']) => () =>
    attacker.call<{ outcomes: Outcomes; allRefused: boolean; names?: string[] }>({
      phase: phaseName,
      target,
      durationMs: DURATION_S * 1000,
      only: process.env.BENCH_ABUSE_ONLY,
    });
  /** The service's RSS at the end of a phase, and 5 s later (issue 23: memory back within seconds). */
  const settle = async () => {
    const atEnd = await rssMb(child.pid);
    await sleep(5000);
    return { rssAtEndMb: atEnd, rssAfter5sMb: await rssMb(child.pid) };
  };

  print('\n[quiet] read load alone …');
  const quiet = await phase(url, database.apiKey, async () => undefined);
  const quietRss = await settle();

  const caseNames = await attacker.call<string[]>({
    phase: 'cases',
    target,
    durationMs: 0,
    only: process.env.BENCH_ABUSE_ONLY,
  });
  const round2: {
    name: string;
    result: PhaseResult;
    runs: CaseRuns;
    rss: Awaited<ReturnType<typeof settle>>;
    window: { from: number; to: number };
  }[] = [];
  for (const caseName of caseNames) {
    print(`[case] read load with: ${caseName} …`);
    const window = { from: monotonicUs(), to: 0 };
    const result = await phase(url, database.apiKey, () =>
      attacker.call<CaseRuns>({ phase: 'case', caseName, target, durationMs: DURATION_S * 1000 }),
    );
    window.to = monotonicUs();
    round2.push({ name: caseName, result, runs: result.beside, rss: await settle(), window });
  }
  print('[attacked] read load with every hostile request, back to back …');
  const attackWindow = { from: monotonicUs(), to: 0 };
  const attacked = await phase(url, database.apiKey, side('attack'));
  attackWindow.to = monotonicUs();
  print('[mixed] read load with creates, one completion and one oversized request …');
  const mixedResult = await phase(url, database.apiKey, side('mixed'));
  await attacker.stop();
  const { outcomes, allRefused, names = [] } = attacked.beside;

  print('\n| phase | reads/s | read p99 ms | ratio to quiet | read errors | /health p99 ms |');
  print('|---|---|---|---|---|---|');
  for (const [name, r] of [
    ['quiet', quiet],
    ['attacked', attacked],
    ['mixed', mixedResult],
  ] as const) {
    print(
      `| ${name} | ${fmt(r.readReqPerSec, 0)} | ${fmt(r.readP99Ms, 0)} | ${fmt(r.readP99Ms / quiet.readP99Ms, 2)} | ` +
        `${r.readErrors} | ${fmt(r.healthP99Ms, 0)} |`,
    );
  }
  print('\n| hostile request | runs | answers | slowest ms |');
  print('|---|---|---|---|');
  for (const name of names) {
    const entry = outcomes[name];
    if (!entry) {
      print(`| ${name} | 0 | — | — |`);
      continue;
    }
    const statuses = Object.entries(entry.statuses)
      .map(([label, n]) => `${label} ×${n}`)
      .join(', ');
    print(`| ${name} | ${entry.runs} | ${statuses} | ${fmt(entry.maxMs, 0)} |`);
  }
  const ratio = attacked.readP99Ms / quiet.readP99Ms;

  print(
    `\nIssue 23's cases, each alone beside the read load (quiet: read p99 ${fmt(quiet.readP99Ms, 0)} ms, /health max ` +
      `${fmt(quiet.healthMaxMs, 0)} ms, RSS ${fmt(quietRss.rssAtEndMb, 0)} MB):`,
  );
  print('\n| case | runs | outcomes | slowest ms | read p99 ms | ratio | /health max ms | RSS end → +5 s MB | |');
  print('|---|---|---|---|---|---|---|---|---|');
  const round2Targets: Record<string, boolean> = {};
  for (const { name, result, runs, rss } of round2) {
    const caseRatio = result.readP99Ms / quiet.readP99Ms;
    const pass = caseRatio <= 2 && result.healthMaxMs < 1000 && runs.allHandled;
    round2Targets[name] = pass;
    const outcomes = Object.entries(runs.labels)
      .map(([label, n]) => `${label} ×${n}`)
      .join('; ');
    print(
      `| ${name} | ${runs.runs} | ${outcomes} | ${fmt(runs.slowestMs, 0)} | ${fmt(result.readP99Ms, 0)} | ` +
        `${fmt(caseRatio, 2)} | ${fmt(result.healthMaxMs, 0)} | ` +
        `${fmt(rss.rssAtEndMb, 0)} → ${fmt(rss.rssAfter5sMb, 0)} | ${passMiss(pass)} |`,
    );
  }
  print('(PASS: read p99 ≤ 2× quiet, /health under 1 s throughout, every run handled as its case expects)');

  const targets = {
    attackedRatio: ratio <= 3,
    healthQuiet: quiet.healthP99Ms <= 100,
    healthAttacked: attacked.healthP99Ms <= 100,
    healthMixed: mixedResult.healthP99Ms <= 100,
    allRefused,
    round2: round2Targets,
  };
  print(`\nread p99 under attack ≤ 3× quiet: ${fmt(ratio, 2)}× ${passMiss(targets.attackedRatio)}`);
  print(
    `/health p99 ≤ 100 ms: quiet ${fmt(quiet.healthP99Ms, 0)} ${passMiss(targets.healthQuiet)}, attacked ` +
      `${fmt(attacked.healthP99Ms, 0)} ${passMiss(targets.healthAttacked)}, mixed ${fmt(mixedResult.healthP99Ms, 0)}` +
      ` ${passMiss(targets.healthMixed)}`,
  );
  print(
    `every hostile request refused (a 4xx, a GraphQL error of the request's own fault, or for an over-limit body ` +
      `the connection closed): ${passMiss(targets.allRefused)}`,
  );
  print(
    `BENCH_RESULT ${JSON.stringify({
      quiet,
      quietRss,
      round2: round2.map(({ name, result, runs, rss }) => ({ name, ...result, beside: undefined, runs, rss })),
      attacked: { ...attacked, beside: undefined },
      mixed: { ...mixedResult, beside: undefined },
      ratio,
      hostile: outcomes,
      targets,
    })}`,
  );
  if (profileDir) {
    await stopChild(child);
    await printProfile(profileDir, attackWindow, 'the attack');
    for (const { name, window } of round2) await printProfile(profileDir, window, name);
  }
  // Stop the service and drop the bench database (its pool would otherwise keep this process alive).
  await runCleanups();
  return 0;
}

runWorkerOrBench(WORKER_ENV, createAttacker, main);
