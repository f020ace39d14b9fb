/**
 * `npm run bench:subscriptions`: live events fanned out to many GraphQL subscribers (issue 6,
 * "Benchmarks"; see bench/README.md). Prints a table, ratios to the baseline measured in the same
 * run, and a final `BENCH_RESULT {json}` line. The exit code is non-zero only when something
 * could not run or a subscriber missed an event.
 *
 * 1. Signet as `npm start` runs it (dist/main.mjs; LOG_LEVEL=warn, NODE_ENV=production,
 *    CREATE_DEV_ACCOUNT=false; in-process live events, or Redis when REDIS_URL is set) on a fresh
 *    bench database; a template and a submission made through the API.
 * 2. BENCH_SUBSCRIBERS (1,000) graphql-ws clients, one WebSocket each, in this process, each
 *    subscribed to `submissionUpdated(id)` of that submission with the API key in
 *    connectionParams. Warm-up events until every subscriber has had one (the protocol does not
 *    acknowledge a subscription), then BENCH_EVENTS events, one at a time: `DELETE
 *    /api/submissions/{id}` (submission.archived, raised on every call), waiting until every
 *    subscriber has the new `archivedAt` before the next. Latency per subscriber and event: from
 *    sending the DELETE to the message's arrival; and from the event (its `archivedAt`, set just
 *    before the commit and the emit, same clock) to arrival.
 * 3. Baseline, same run, same client process: bench/ws-broadcast-server.mjs (node:http + `ws`, no
 *    GraphQL, no database) with as many plain WebSocket clients; `POST /broadcast` with the same
 *    JSON Signet sent (a graphql-ws `next` message with the same data), as many times; latency
 *    from sending the POST to arrival.
 * 4. RSS (VmRSS) of each server process: idle, with the subscribers connected, after the events;
 *    and CPU time of each server per event.
 *
 * Env: DATABASE_URL (else an embedded PostgreSQL), BENCH_SUBSCRIBERS (default 1000), BENCH_EVENTS
 * (default 30), REDIS_URL (pass it to Signet: events go through Redis), BENCH_CPU_PROFILE_DIR (run
 * Signet with --cpu-prof, writing its .cpuprofile there; open it in Chrome DevTools).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { createBenchDatabase, redactUrl } from './bench-database.ts';
import { cleanUpOnSignals, onCleanup, runCleanups, runBench } from './cleanup.ts';
import {
  buildService,
  childEnv,
  cpuMs,
  freePort,
  REPO_ROOT,
  rssMb,
  sleep,
  spawnNode,
  stopChild,
  waitHealthy,
  type NodeChild,
} from './processes.ts';
import { envNumber, fmt, print, round } from './util.ts';

const SUBSCRIBERS = envNumber('BENCH_SUBSCRIBERS', 1000);
const EVENTS = envNumber('BENCH_EVENTS', 30);
const REDIS_URL = process.env.REDIS_URL || undefined;
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE_DIR || undefined;
const SIGNET_ENV = { LOG_LEVEL: 'warn', NODE_ENV: 'production', CREATE_DEV_ACCOUNT: 'false' } as const;
const FIXTURE = path.resolve(REPO_ROOT, '..', 'shared', 'fixtures', 'pdf', 'documenso-letter-size.pdf');
/** How long one event may take to reach every subscriber before the run counts it as missed. */
const EVENT_TIMEOUT_MS = 30_000;
/** Clients opened at once while connecting. */
const CONNECT_BATCH = 50;

const SUBSCRIPTION = /* GraphQL */ `
  subscription Bench($id: Int!) {
    submissionUpdated(id: $id) {
      eventType timestamp submitter { id }
      submission { id archivedAt status submitters { id email status completedAt } }
    }
  }
`;

cleanUpOnSignals();

interface Server {
  child: NodeChild;
  url: string;
}

/** Arrival times of one event at each subscriber (index = subscriber). */
interface Round {
  /** performance.now() when the trigger request was sent. */
  sentAt: number;
  /** Date.now() of the event itself (Signet: archivedAt), or NaN. */
  eventAt: number;
  arrivals: (number | undefined)[];
  /** Date.now() at each arrival, for the event-to-arrival latency. */
  wallArrivals: (number | undefined)[];
  received: number;
  done: () => void;
}

/** The current round; each subscriber's handler records into it. */
let current: Round | undefined;

function record(index: number, key: string | undefined) {
  const round = current;
  if (!round || round.arrivals[index] !== undefined) return;
  // A message of an earlier round (a straggler after a timeout) is not this round's; until the
  // trigger has answered, the event's time is not known and arrivals are taken as they come.
  if (key !== undefined && Number.isFinite(round.eventAt) && Date.parse(key) !== round.eventAt) return;
  round.arrivals[index] = performance.now();
  round.wallArrivals[index] = Date.now();
  round.received += 1;
  if (round.received === SUBSCRIBERS) round.done();
}

/**
 * Runs one event: `trigger` sends it (resolving with the event's own time in ms since the epoch,
 * or NaN); resolves when every subscriber has it or after EVENT_TIMEOUT_MS.
 */
async function runRound(trigger: () => Promise<number>): Promise<Round> {
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const round: Round = {
    sentAt: performance.now(),
    eventAt: Number.NaN,
    arrivals: new Array(SUBSCRIBERS),
    wallArrivals: new Array(SUBSCRIBERS),
    received: 0,
    done,
  };
  // Arrivals may come before the trigger's answer: the round accepts them before the event time is known.
  current = round;
  round.eventAt = await trigger();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([finished, new Promise<void>((resolve) => (timer = setTimeout(resolve, EVENT_TIMEOUT_MS)))]);
  clearTimeout(timer);
  current = undefined;
  return round;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Latency {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}

function latencies(rounds: Round[], from: 'sent' | 'event'): Latency {
  const values: number[] = [];
  for (const round of rounds) {
    for (let i = 0; i < SUBSCRIBERS; i += 1) {
      if (from === 'sent' && round.arrivals[i] !== undefined) values.push(round.arrivals[i]! - round.sentAt);
      if (from === 'event' && round.wallArrivals[i] !== undefined) values.push(round.wallArrivals[i]! - round.eventAt);
    }
  }
  return { p50: percentile(values, 50), p99: percentile(values, 99), max: Math.max(...values), samples: values.length };
}

async function startSignet(databaseUrl: string, dataDir: string): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = childEnv({
    ...SIGNET_ENV,
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    ...(REDIS_URL ? { REDIS_URL } : {}),
  });
  if (!REDIS_URL) delete env.REDIS_URL;
  const child = spawnNode(
    'dist/main.mjs',
    env,
    PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(PROFILE_DIR)}`] : [],
  );
  onCleanup(`stop Signet (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 60_000);
  return { child, url };
}

async function startBaseline(): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnNode('bench/ws-broadcast-server.mjs', childEnv({ PORT: String(port) }));
  onCleanup(`stop the baseline (pid ${child.pid})`, async () => {
    await stopChild(child);
  });
  await waitHealthy(child, url, performance.now(), 30_000);
  return { child, url };
}

async function api(baseUrl: string, apiKey: string, method: string, route: string, body?: unknown): Promise<any> {
  const response = await fetch(`${baseUrl}/api${route}`, {
    method,
    headers: { 'x-auth-token': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/** Opens the graphql-ws subscribers, CONNECT_BATCH at a time; each records its messages by index. */
async function connectGraphqlSubscribers(
  url: string,
  apiKey: string,
  submissionId: number,
  onData: (data: any) => void,
): Promise<Client[]> {
  const clients: Client[] = [];
  for (let start = 0; start < SUBSCRIBERS; start += CONNECT_BATCH) {
    const batch: Promise<void>[] = [];
    for (let index = start; index < Math.min(SUBSCRIBERS, start + CONNECT_BATCH); index += 1) {
      batch.push(
        new Promise<void>((resolve, reject) => {
          const client = createClient({
            url: `${url.replace(/^http/, 'ws')}/graphql`,
            webSocketImpl: WebSocket,
            connectionParams: { 'X-Auth-Token': apiKey },
            retryAttempts: 0,
            lazy: true,
            on: { connected: () => resolve() },
          });
          clients.push(client);
          client.subscribe(
            { query: SUBSCRIPTION, variables: { id: submissionId } },
            {
              next: (result) => {
                if (result.errors) reject(new Error(JSON.stringify(result.errors)));
                onData(result.data);
                record(
                  index,
                  (result.data as { submissionUpdated: { submission: { archivedAt: string } } }).submissionUpdated
                    .submission.archivedAt,
                );
              },
              error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
              complete: () => undefined,
            },
          );
        }),
      );
    }
    await Promise.all(batch);
  }
  return clients;
}

/** Opens plain WebSocket clients to the baseline; each records every message by index. */
async function connectBaselineClients(url: string): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  for (let start = 0; start < SUBSCRIBERS; start += CONNECT_BATCH) {
    const batch: Promise<void>[] = [];
    for (let index = start; index < Math.min(SUBSCRIBERS, start + CONNECT_BATCH); index += 1) {
      const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/`);
      sockets.push(socket);
      // Parsed as the graphql-ws client parses each message, so both sides do the same work.
      socket.on('message', (raw) => {
        JSON.parse(String(raw));
        record(index, undefined);
      });
      batch.push(new Promise((resolve, reject) => socket.once('open', () => resolve()).once('error', reject)));
    }
    await Promise.all(batch);
  }
  return sockets;
}

async function main(): Promise<number> {
  const problems: string[] = [];
  print(
    `Signet subscription benchmark — node ${process.version}, ` +
      `${os.cpus().length} CPUs, ${SUBSCRIBERS} subscribers, ${EVENTS} events`,
  );

  print('\n[setup] bench database …');
  const database = await createBenchDatabase(onCleanup);
  print(
    `  ${database.kind === 'external' ? 'DATABASE_URL server' : 'embedded PostgreSQL (temp dir)'}: ` +
      `${redactUrl(database.url)}`,
  );
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-subscriptions-'));
  onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
  buildService();
  const signet = await startSignet(database.url, dataDir);
  print(
    `  Signet pid ${signet.child.pid} (dist/main.mjs, live events ` +
      `${REDIS_URL ? `through Redis ${redactUrl(REDIS_URL)}` : 'in process'})`,
  );
  const template = await api(signet.url, database.apiKey, 'POST', '/templates/pdf', {
    name: 'Bench form',
    documents: [{ name: 'form', file: (await fs.readFile(FIXTURE)).toString('base64') }],
    fields: [
      { name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] },
      { name: 'Approval', role: 'Manager', areas: [{ x: 72, y: 200, w: 200, h: 24, page: 1 }] },
    ],
  });
  const parties = await api(signet.url, database.apiKey, 'POST', '/submissions', {
    template_id: template.id,
    send_email: false,
    submitters: [
      { role: 'Client', email: 'client@bench.test' },
      { role: 'Manager', email: 'manager@bench.test' },
    ],
  });
  const submissionId: number = parties[0].submission_id;
  print(`  template ${template.id}, submission ${submissionId} (two submitters)`);

  // ---- Signet
  print(`\n[signet] ${SUBSCRIBERS} graphql-ws subscribers to submissionUpdated(id: ${submissionId}) …`);
  await sleep(1000);
  const signetIdleRss = await rssMb(signet.child.pid);
  let lastData: unknown;
  const connectStarted = performance.now();
  const clients = await connectGraphqlSubscribers(
    signet.url,
    database.apiKey,
    submissionId,
    (data) => (lastData = data),
  );
  onCleanup('close the graphql-ws clients', async () => {
    await Promise.all(clients.map((c) => c.dispose()));
  });
  print(`  connected in ${fmt((performance.now() - connectStarted) / 1000, 1)} s`);
  const archive = async () =>
    Date.parse(
      (await api(signet.url, database.apiKey, 'DELETE', `/submissions/${submissionId}`)).archived_at as string,
    );
  // Warm-up: until every subscriber has had an event (they are listening then).
  let warmups = 0;
  for (;;) {
    warmups += 1;
    const round = await runRound(archive);
    if (round.received === SUBSCRIBERS) break;
    if (warmups >= 20)
      throw new Error(`after 20 warm-up events, only ${round.received} of ${SUBSCRIBERS} subscribers receive`);
  }
  const signetConnectedRss = await rssMb(signet.child.pid);
  print(
    `  all listening after ${warmups} warm-up event(s); RSS ${fmt(signetIdleRss, 0)} MB idle → ` +
      `${fmt(signetConnectedRss, 0)} MB with ${SUBSCRIBERS} subscriptions`,
  );
  const signetCpuBefore = await cpuMs(signet.child.pid);
  const signetRounds: Round[] = [];
  for (let i = 0; i < EVENTS; i += 1) {
    const round = await runRound(archive);
    signetRounds.push(round);
    if (round.received !== SUBSCRIBERS)
      problems.push(
        `signet event ${i}: ${round.received}/${SUBSCRIBERS} subscribers got it within ${EVENT_TIMEOUT_MS / 1000} s`,
      );
  }
  const signetCpuPerEvent = ((await cpuMs(signet.child.pid)) - signetCpuBefore) / EVENTS;
  const signetAfterRss = await rssMb(signet.child.pid);
  const signetSent = latencies(signetRounds, 'sent');
  const signetEvent = latencies(signetRounds, 'event');
  const message = JSON.stringify({ id: '1', type: 'next', payload: { data: lastData } });
  print(
    `  ${EVENTS} events; message ${message.length} bytes: ${message.slice(0, 160)}${message.length > 160 ? '…' : ''}`,
  );
  await Promise.all(clients.map((c) => c.dispose()));
  await stopChild(signet.child);

  // ---- Baseline
  print(`\n[baseline] bench/ws-broadcast-server.mjs, ${SUBSCRIBERS} WebSocket clients, the same message …`);
  const baseline = await startBaseline();
  await sleep(1000);
  const baselineIdleRss = await rssMb(baseline.child.pid);
  const sockets = await connectBaselineClients(baseline.url);
  onCleanup('close the baseline clients', async () => {
    for (const s of sockets) s.terminate();
  });
  const broadcast = async () => {
    const response = await fetch(`${baseline.url}/broadcast`, { method: 'POST', body: message });
    const { sent } = (await response.json()) as { sent: number };
    if (sent !== SUBSCRIBERS) throw new Error(`the baseline sent to ${sent} clients, not ${SUBSCRIBERS}`);
    return Number.NaN;
  };
  for (let i = 0; i < warmups; i += 1) await runRound(broadcast);
  const baselineConnectedRss = await rssMb(baseline.child.pid);
  const baselineCpuBefore = await cpuMs(baseline.child.pid);
  const baselineRounds: Round[] = [];
  for (let i = 0; i < EVENTS; i += 1) {
    const round = await runRound(broadcast);
    baselineRounds.push(round);
    if (round.received !== SUBSCRIBERS) problems.push(`baseline event ${i}: ${round.received}/${SUBSCRIBERS}`);
  }
  const baselineCpuPerEvent = ((await cpuMs(baseline.child.pid)) - baselineCpuBefore) / EVENTS;
  const baselineAfterRss = await rssMb(baseline.child.pid);
  const baselineSent = latencies(baselineRounds, 'sent');
  for (const s of sockets) s.terminate();
  await stopChild(baseline.child);

  // ---- Report
  const ratio = (a: number, b: number) => (b > 0 ? fmt(a / b, 1) : '—');
  const perSubKb = (connected: number, idle: number) => ((connected - idle) * 1024) / SUBSCRIBERS;
  print(`\n[results] ${SUBSCRIBERS} subscribers × ${EVENTS} events (latency per subscriber and event; ms)`);
  print('                                     Signet (graphql-ws)   baseline (ws broadcast)   ratio');
  print(
    `  p50, trigger sent → arrival         ${fmt(signetSent.p50, 1).padStart(10)}            ` +
      `${fmt(baselineSent.p50, 1).padStart(10)}           ${ratio(signetSent.p50, baselineSent.p50)}`,
  );
  print(
    `  p99, trigger sent → arrival         ${fmt(signetSent.p99, 1).padStart(10)}            ` +
      `${fmt(baselineSent.p99, 1).padStart(10)}           ${ratio(signetSent.p99, baselineSent.p99)}`,
  );
  print(
    `  max, trigger sent → arrival         ${fmt(signetSent.max, 1).padStart(10)}            ` +
      `${fmt(baselineSent.max, 1).padStart(10)}           ${ratio(signetSent.max, baselineSent.max)}`,
  );
  print(
    `  p50 / p99, event (archivedAt) → arrival ${fmt(signetEvent.p50, 0)} ` +
      `/ ${fmt(signetEvent.p99, 0)} (Signet only; ms clock)`,
  );
  print(
    `  server CPU per event (ms)           ${fmt(signetCpuPerEvent, 1).padStart(10)}            ` +
      `${fmt(baselineCpuPerEvent, 1).padStart(10)}           ${ratio(signetCpuPerEvent, baselineCpuPerEvent)}`,
  );
  print(
    `  RSS idle (MB)                       ${fmt(signetIdleRss, 0).padStart(10)}            ` +
      `${fmt(baselineIdleRss, 0).padStart(10)}           ${ratio(signetIdleRss, baselineIdleRss)}`,
  );
  print(
    `  RSS with subscribers (MB)           ${fmt(signetConnectedRss, 0).padStart(10)}            ` +
      `${fmt(baselineConnectedRss, 0).padStart(10)}           ${ratio(signetConnectedRss, baselineConnectedRss)}`,
  );
  print(
    `  RSS after the events (MB)           ${fmt(signetAfterRss, 0).padStart(10)}            ` +
      `${fmt(baselineAfterRss, 0).padStart(10)}           ${ratio(signetAfterRss, baselineAfterRss)}`,
  );
  print(
    `  RSS per subscriber (KB)             ${fmt(perSubKb(signetConnectedRss, signetIdleRss), 1).padStart(10)}` +
      `            ${fmt(perSubKb(baselineConnectedRss, baselineIdleRss), 1).padStart(10)}           ` +
      `${ratio(perSubKb(signetConnectedRss, signetIdleRss), perSubKb(baselineConnectedRss, baselineIdleRss))}`,
  );
  for (const problem of problems) print(`  PROBLEM: ${problem}`);

  const result = {
    subscribers: SUBSCRIBERS,
    events: EVENTS,
    transport: REDIS_URL ? 'redis' : 'memory',
    signet: {
      sentToArrivalMs: { p50: round(signetSent.p50, 1), p99: round(signetSent.p99, 1), max: round(signetSent.max, 1) },
      eventToArrivalMs: { p50: signetEvent.p50, p99: signetEvent.p99 },
      cpuMsPerEvent: round(signetCpuPerEvent, 1),
      rssMb: {
        idle: round(signetIdleRss, 1),
        connected: round(signetConnectedRss, 1),
        after: round(signetAfterRss, 1),
      },
    },
    baseline: {
      sentToArrivalMs: {
        p50: round(baselineSent.p50, 1),
        p99: round(baselineSent.p99, 1),
        max: round(baselineSent.max, 1),
      },
      cpuMsPerEvent: round(baselineCpuPerEvent, 1),
      rssMb: {
        idle: round(baselineIdleRss, 1),
        connected: round(baselineConnectedRss, 1),
        after: round(baselineAfterRss, 1),
      },
    },
    ratios: {
      p99: round(signetSent.p99 / baselineSent.p99, 2),
      cpuPerEvent: round(signetCpuPerEvent / baselineCpuPerEvent, 2),
      rssConnected: round(signetConnectedRss / baselineConnectedRss, 2),
    },
    problems,
  };
  print(`BENCH_RESULT ${JSON.stringify(result)}`);
  await runCleanups();
  return problems.length > 0 ? 1 : 0;
}

runBench(main);
