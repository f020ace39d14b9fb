/**
 * GET /metrics and request ids (issue 18, "Metrics and traces"; docs/operations.md), on a real
 * service (HTTP on loopback, PostgreSQL, a real SMTP server and a webhook receiver): after real
 * traffic the scrape, parsed as Prometheus' text format, holds
 * - HTTP requests by method, route pattern (never the raw URL) and status, with histograms;
 * - GraphQL operations by type and name, the names bounded;
 * - job runs (a submission's completion among them), the queue's due jobs and the oldest one's age;
 * - webhook attempt and email outcomes; the PostgreSQL pools' connections;
 * /metrics refuses a request without METRICS_TOKEN; every response carries X-Request-Id (an
 * incoming one kept when well-formed and bounded), and the log lines of the request carry it,
 * those written through the GraphQL context's logger included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { MAX_OPERATION_NAMES } from '../src/observability/metrics.ts';
import { acceptConsentViaApi, graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { freePort } from './helpers/processes.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

const TOKEN = 'metrics-token-for-the-test';
let t: TestApp;
let smtp: TestSmtpServer;
let receiver: Receiver;
let account: CreatedAccount;
let templateId: number;

beforeAll(async () => {
  smtp = await startSmtpServer();
  receiver = await startReceiver();
  t = await startTestApp({
    env: {
      METRICS_TOKEN: TOKEN,
      SMTP_URL: smtp.url,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // A failed webhook or email is retried long after the test.
      WEBHOOK_RETRY_BASE_MS: '3600000',
      SEND_RETRY_BASE_MS: '3600000',
    },
  });
  account = await t.createAccount();
  const template = await rest(t.url, account.apiKey, 'POST', '/templates/pdf', {
    name: 'Metrics',
    documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  templateId = template.json.id;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await smtp?.close();
  await receiver?.close();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus' text exposition format (0.0.4), the samples only. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

async function scrape(): Promise<Sample[]> {
  const response = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await response.text());
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when none. */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([k, v]) => sample.labels[k] === v),
  );
  expect(found.length, `${name} ${JSON.stringify(labels)}`).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

describe('GET /metrics', { timeout: 120_000 }, () => {
  it('refuses a scrape without the token, or with another one', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-the-token' }, { authorization: TOKEN }] as Record<
      string,
      string
    >[]) {
      const response = await fetch(`${t.url}/metrics`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await response.json()).toEqual({ error: 'Not authenticated' });
    }
  });

  it('counts HTTP requests by route pattern and status, with latency histograms', async () => {
    const before = await scrape();
    const user = { method: 'GET', route: '/api/user', status_code: '200' };
    const missing = { method: 'GET', route: '/api/submissions/:id', status_code: '404' };
    for (let i = 0; i < 3; i += 1) expect((await rest(t.url, account.apiKey, 'GET', '/user')).status).toBe(200);
    for (const id of [999_001, 999_002])
      expect((await rest(t.url, account.apiKey, 'GET', `/submissions/${id}`)).status).toBe(404);
    expect((await fetch(`${t.url}/no/such/path`)).status).toBe(404);
    const after = await scrape();
    const count = (samples: Sample[], labels: Record<string, string>) =>
      value(samples, 'signet_http_request_duration_seconds_count', labels) ?? 0;
    expect(count(after, user) - count(before, user)).toBe(3);
    expect(count(after, missing) - count(before, missing)).toBe(2);
    expect(count(after, { route: 'unmatched', status_code: '404' })).toBeGreaterThanOrEqual(1);
    // The histogram: cumulative buckets up to +Inf, which equals the count.
    const buckets = after.filter(
      (s) => s.name === 'signet_http_request_duration_seconds_bucket' && s.labels.route === '/api/user',
    );
    expect(buckets.map((s) => s.labels.le)).toContain('+Inf');
    expect(buckets.find((s) => s.labels.le === '+Inf')!.value).toBe(count(after, user));
    expect(value(after, 'signet_http_request_duration_seconds_sum', user)).toBeGreaterThan(0);
    // Route patterns only: the ids asked for are in no label.
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes('999001')))).toBe(false);
  });

  it('counts GraphQL operations by type and name, with at most MAX_OPERATION_NAMES names', async () => {
    const ask = (query: string) => graphql(t.url, query, { key: account.apiKey });
    expect((await ask('query Viewer { viewer { user { id } } }')).status).toBe(200);
    expect((await ask('{ viewer { user { id } } }')).status).toBe(200);
    expect((await ask('query Broken { submission(id: 987654) { id } }')).body.errors).toBeDefined();
    for (let i = 0; i < MAX_OPERATION_NAMES + 20; i += 1) await ask(`query Name${i} { viewer { user { id } } }`);
    const samples = await scrape();
    const count = (labels: Record<string, string>) =>
      value(samples, 'signet_graphql_operation_duration_seconds_count', labels);
    expect(count({ operation_type: 'query', operation_name: 'Viewer', outcome: 'ok' })).toBe(1);
    expect(count({ operation_type: 'query', operation_name: 'anonymous', outcome: 'ok' })).toBe(1);
    expect(count({ operation_type: 'query', operation_name: 'Broken', outcome: 'error' })).toBe(1);
    const names = new Set(
      samples
        .filter((s) => s.name === 'signet_graphql_operation_duration_seconds_count')
        .map((s) => s.labels.operation_name),
    );
    expect(names.size).toBeLessThanOrEqual(MAX_OPERATION_NAMES + 2);
    expect(count({ operation_type: 'query', operation_name: 'other', outcome: 'ok' })).toBeGreaterThanOrEqual(20);
  });

  it("reports the queue's due jobs by name and how long the oldest has waited", async () => {
    // A job no instance defines stays due: its wait grows from its run time, a minute ago.
    await t.jobs.enqueue('metrics.unhandled', { n: 1 }, { at: new Date(Date.now() - 60_000) });
    await t.jobs.enqueue('metrics.unhandled', { n: 2 }, { at: new Date(Date.now() - 5_000) });
    const samples = await scrape();
    expect(value(samples, 'signet_jobs', { job: 'metrics.unhandled', state: 'due' })).toBe(2);
    expect(value(samples, 'signet_jobs_oldest_due_age_seconds')).toBeGreaterThanOrEqual(60);
    expect(value(samples, 'signet_outbox_rows')).toBe(0);
    for (const pool of ['service', 'jobs']) {
      expect(value(samples, 'signet_db_pool_connections', { pool, state: 'idle' })).toBeGreaterThanOrEqual(0);
      expect(value(samples, 'signet_db_pool_connections', { pool, state: 'waiting' })).toBe(0);
    }
    expect(await t.jobs.cancel('metrics.unhandled', {})).toBe(2);
    expect(value(await scrape(), 'signet_jobs', { job: 'metrics.unhandled', state: 'due' })).toBeUndefined();
  });

  it('counts webhook attempts, emails by outcome, job runs and completion durations', async () => {
    const endpoint = await graphql(
      t.url,
      'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url, events: ["submission.created"]}) ' +
        '{ endpoint { id } } }',
      { key: account.apiKey, variables: { url: `${receiver.url}/hooks` } },
    );
    expect(endpoint.body.errors).toBeUndefined();
    const create = async (email: string) => {
      const made = await rest(t.url, account.apiKey, 'POST', '/submissions', {
        template_id: templateId,
        send_email: true,
        submitters: [{ role: 'Client', email }],
      });
      expect(made.status, JSON.stringify(made.json)).toBe(200);
      await t.jobs.waitForIdle({ timeoutMs: 30_000 });
      return made.json[0] as { slug: string };
    };
    // Accepted webhook and email.
    receiver.respond(() => ({ status: 200 }));
    const first = await create('first@metrics.test');
    // A webhook answered 500 (retried in an hour) and an email refused for good.
    receiver.respond(() => ({ status: 500 }));
    smtp.rejectNext(550, 'No such user');
    await create('second@metrics.test');
    // An email deferred (451: retried in an hour).
    receiver.respond(() => ({ status: 200 }));
    smtp.rejectNext(451, 'Try later');
    await create('third@metrics.test');

    // The first party signs: the submission's completion runs.
    const template = await rest(t.url, account.apiKey, 'GET', `/templates/${templateId}`);
    await acceptConsentViaApi(t.url, first.slug);
    const completed = await graphql(
      t.url,
      'mutation ($slug: String!, $values: JSON) { completeSigningForm(slug: $slug, values: $values) { slug } }',
      { variables: { slug: first.slug, values: { [template.json.fields[0].uuid]: 'Ada' } } },
    );
    expect(completed.body.errors, JSON.stringify(completed.body.errors)).toBeUndefined();
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });

    const samples = await scrape();
    expect(value(samples, 'signet_webhook_attempts_total', { outcome: 'succeeded' })).toBe(2);
    expect(value(samples, 'signet_webhook_attempts_total', { outcome: 'retrying' })).toBe(1);
    const emails = (outcome: string) =>
      value(samples, 'signet_messages_total', { channel: 'email', provider: 'smtp', outcome });
    expect(emails('refused')).toBe(1);
    expect(emails('failed_retryable')).toBe(1);
    // The first request, and the completed emails to its party (a copy) and the owner.
    expect(emails('sent')).toBeGreaterThanOrEqual(2);
    const runs = (job: string, outcome: string) =>
      value(samples, 'signet_job_run_duration_seconds_count', { job, outcome });
    expect(runs('complete-submission', 'ok')).toBe(1);
    expect(
      value(samples, 'signet_job_run_duration_seconds_sum', { job: 'complete-submission', outcome: 'ok' }),
    ).toBeGreaterThan(0);
    expect(runs('send-signature-request', 'ok')).toBe(2);
    expect(runs('send-signature-request', 'error')).toBe(1);
    expect(runs('deliver-webhook', 'ok')).toBe(3);
  });

  it('includes the process metrics (memory, CPU, event-loop lag)', async () => {
    const names = new Set((await scrape()).map((s) => s.name));
    for (const name of ['process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_eventloop_lag_seconds'])
      expect(names).toContain(name);
  });
});

describe('request ids', { timeout: 60_000 }, () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('answer each request with a new X-Request-Id, or the incoming one when well-formed and bounded', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 3; i += 1) {
      const id = (await fetch(`${t.url}/health`)).headers.get('x-request-id')!;
      expect(id).toMatch(UUID);
      ids.add(id);
    }
    expect(ids.size).toBe(3);
    const kept = 'lb-7f3a.c2:0042';
    expect((await fetch(`${t.url}/health`, { headers: { 'x-request-id': kept } })).headers.get('x-request-id')).toBe(
      kept,
    );
    for (const refused of ['has spaces', 'a'.repeat(129), 'quote"d', 'semi;colon', 'line%0Abreak']) {
      const response = await fetch(`${t.url}/health`, { headers: { 'x-request-id': refused } });
      expect(response.headers.get('x-request-id'), refused).toMatch(UUID);
    }
  });

  it('is on the log lines of the request, those of the GraphQL context included', async () => {
    // A test event needs a submitter to describe.
    const made = await rest(t.url, account.apiKey, 'POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'logged@metrics.test' }],
    });
    expect(made.status).toBe(200);
    // A test webhook to a port nobody listens on: the send runs in the request, and its failure is
    // logged through the GraphQL context's logger.
    const endpoint = await graphql(
      t.url,
      'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url}) { endpoint { id } } }',
      { key: account.apiKey, variables: { url: `http://127.0.0.1:${await freePort()}/hook` } },
    );
    const id = 'req-metrics-test-1';
    const response = await graphql(
      t.url,
      'mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { delivery { id } } }',
      {
        key: account.apiKey,
        variables: { id: endpoint.body.data.createWebhookEndpoint.endpoint.id },
        headers: { 'x-request-id': id },
      },
    );
    expect(response.body.errors, JSON.stringify(response.body.errors)).toBeUndefined();
    const lines = t.logs.filter((line) => line.reqId === id).map((line) => line.msg);
    expect(lines).toEqual(expect.arrayContaining(['incoming request', 'webhook request failed', 'request completed']));
  });
});
