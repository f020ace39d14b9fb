/**
 * OpenTelemetry traces (issue 18, "Metrics and traces"; src/observability/tracing.ts), off unless
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. A real service process sends its spans to an OTLP/HTTP
 * receiver on loopback, which checks each export as the OTLP specification documents it
 * (opentelemetry-proto, "OTLP/HTTP"): `POST <endpoint>/v1/traces`, `Content-Type:
 * application/json`, an ExportTraceServiceRequest in the protobuf JSON mapping with trace and span
 * ids as hex (not base64), answered 200 with an empty ExportTraceServiceResponse. The spans: each
 * request a SERVER span named after its route, a child of the caller's `traceparent`; a GraphQL
 * operation a child of its request's span.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb } from '../src/db/client.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { startService, type ServiceProcess } from './helpers/processes.ts';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes: OtlpAttribute[];
  status?: { code?: number };
}
interface Export {
  resource: Record<string, unknown>;
  scope: string;
  spans: OtlpSpan[];
}

/** SpanKind in opentelemetry-proto's trace.proto. */
const SPAN_KIND_INTERNAL = 1;
const SPAN_KIND_SERVER = 2;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

let database: TestDatabase;
let account: CreatedAccount;
let collector: http.Server;
let collectorUrl: string;
const exports: Export[] = [];
const refusals: string[] = [];
let service: ServiceProcess | undefined;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-tracing-'));

/** An attribute's value as JSON (intValue is a string in the protobuf JSON mapping of int64). */
const attributeValue = (value: OtlpAttribute['value']) =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue);

/**
 * The OTLP/HTTP receiver: refuses (and records why) anything that is not an export as the
 * specification has it, keeps the spans of the others.
 */
function receive(request: http.IncomingMessage, body: string, response: http.ServerResponse) {
  const refuse = (why: string) => {
    refusals.push(why);
    response.writeHead(400, { 'content-type': 'application/json' }).end('{}');
  };
  if (request.method !== 'POST' || request.url !== '/v1/traces') return refuse(`${request.method} ${request.url}`);
  if (!/^application\/json\b/.test(request.headers['content-type'] ?? ''))
    return refuse(`content-type ${request.headers['content-type']}`);
  let parsed: any;
  try {
    parsed = JSON.parse(body);
  } catch {
    return refuse('not JSON');
  }
  if (!Array.isArray(parsed.resourceSpans)) return refuse('no resourceSpans');
  for (const resourceSpans of parsed.resourceSpans) {
    const resource = Object.fromEntries(
      (resourceSpans.resource?.attributes ?? []).map((a: OtlpAttribute) => [a.key, attributeValue(a.value)]),
    );
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans as OtlpSpan[]) {
        if (!/^[0-9a-f]{32}$/.test(span.traceId) || !/^[0-9a-f]{16}$/.test(span.spanId))
          return refuse(`ids not hex: ${span.traceId} ${span.spanId}`);
        if (span.parentSpanId && !/^[0-9a-f]{16}$/.test(span.parentSpanId))
          return refuse(`parent not hex: ${span.parentSpanId}`);
        if (
          !/^\d+$/.test(String(span.startTimeUnixNano)) ||
          BigInt(span.endTimeUnixNano) < BigInt(span.startTimeUnixNano)
        )
          return refuse(`times ${span.startTimeUnixNano} ${span.endTimeUnixNano}`);
      }
      exports.push({ resource, scope: scopeSpans.scope?.name, spans: scopeSpans.spans });
    }
  }
  // Full success: an empty ExportTraceServiceResponse.
  response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
}

beforeAll(async () => {
  database = await createTestDatabase();
  const db = createDb(database.url, { poolSize: 1 });
  account = await createAccount(db, { name: 'Traced', email: 'owner@tracing.test' });
  await db.$disconnect();
  collector = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => receive(request, body, response));
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  if (service) await service.stop();
  await new Promise((resolve) => collector?.close(resolve));
  await database?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const allSpans = () => exports.flatMap((e) => e.spans);
const attributesOf = (span: OtlpSpan) =>
  Object.fromEntries(span.attributes.map((a) => [a.key, attributeValue(a.value)]));

describe('traces over OTLP/HTTP', { timeout: 120_000 }, () => {
  it('sends a span per request and per GraphQL operation, children of the caller’s traceparent', async () => {
    service = await startService({
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      CREATE_DEV_ACCOUNT: 'false',
      OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
      OTEL_SERVICE_NAME: 'signet-under-test',
    });
    const traceparent = `00-${TRACE_ID}-${PARENT_ID}-01`;
    const user = await fetch(`${service.url}/api/user`, {
      headers: { 'X-Auth-Token': account.apiKey, traceparent },
    });
    expect(user.status).toBe(200);
    const viewer = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Auth-Token': account.apiKey, traceparent },
      body: JSON.stringify({ query: 'query Viewer { viewer { user { id } } }' }),
    });
    expect(viewer.status).toBe(200);
    // SIGTERM: the spans still buffered are sent before the process ends.
    expect(await service.stop()).toBe(0);
    service = undefined;

    expect(refusals).toEqual([]);
    expect(exports.length).toBeGreaterThan(0);
    for (const e of exports) {
      expect(e.resource['service.name']).toBe('signet-under-test');
      expect(e.resource['service.version']).toMatch(/^\d+\.\d+\.\d+/);
      expect(e.scope).toBe('signet');
    }
    const spans = allSpans();
    const rest = spans.find((span) => span.name === 'GET /api/user');
    expect(rest, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(rest).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_ID, kind: SPAN_KIND_SERVER });
    expect(attributesOf(rest!)).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/user',
      'url.path': '/api/user',
      'http.response.status_code': 200,
    });
    const request = spans.find((span) => span.name === 'POST /graphql');
    const operation = spans.find((span) => span.name === 'query Viewer');
    expect(request).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_ID, kind: SPAN_KIND_SERVER });
    expect(operation).toMatchObject({ traceId: TRACE_ID, parentSpanId: request!.spanId, kind: SPAN_KIND_INTERNAL });
    expect(attributesOf(operation!)).toMatchObject({
      'graphql.operation.type': 'query',
      'graphql.operation.name': 'Viewer',
    });
  });

  it('sends nothing when OTEL_EXPORTER_OTLP_ENDPOINT is unset', async () => {
    const before = exports.length;
    service = await startService({
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      CREATE_DEV_ACCOUNT: 'false',
    });
    expect((await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': account.apiKey } })).status).toBe(200);
    expect(await service.stop()).toBe(0);
    service = undefined;
    expect(exports.length).toBe(before);
  });
});
