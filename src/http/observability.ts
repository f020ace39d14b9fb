/**
 * What every HTTP request leaves behind for operators: its id in the `X-Request-Id` response header
 * (the same id Fastify writes as `reqId` on each of its log lines: src/observability/request-ids.ts),
 * its route, status and duration in the metrics, and (with tracing on) its span; and `GET /metrics`,
 * the Prometheus scrape (src/observability/metrics.ts), behind `Authorization: Bearer
 * <METRICS_TOKEN>` when that is set (docs/operations.md).
 *
 * Cost per request: one header, one histogram observation (a label lookup and a bucket search), no
 * AsyncLocalStorage; measured with `npm run bench` (docs/operations.md "Metrics").
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from '../observability/metrics.ts';
import { REQUEST_ID_HEADER } from '../observability/request-ids.ts';
import type { RequestSpan, Tracing } from '../observability/tracing.ts';

/** The path Prometheus scrapes. */
export const METRICS_PATH = '/metrics';

/** The span of each request in flight (tracing on only). */
const requestSpans = new WeakMap<FastifyRequest, RequestSpan>();

/** The request's span, when tracing is on: the parent of its GraphQL operation's span. */
export function requestSpanOf(request: FastifyRequest): RequestSpan | undefined {
  return requestSpans.get(request);
}

/**
 * Registers the request hooks (id header, metrics, spans) and `GET /metrics`. Call before the
 * routes it should observe.
 * @param options.metricsToken when set, /metrics answers 401 without `Authorization: Bearer <it>`
 */
export function registerObservability(
  fastify: FastifyInstance,
  options: { metrics: Metrics; metricsToken: string | undefined; tracing: Tracing | undefined },
): void {
  const { metrics, tracing } = options;
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    if (tracing) {
      const traceparent = request.headers.traceparent;
      const path = request.url.split('?', 1)[0]!;
      requestSpans.set(
        request,
        tracing.startRequest(request.method, path, typeof traceparent === 'string' ? traceparent : undefined),
      );
    }
    done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url;
    metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    requestSpans.get(request)?.end(route, reply.statusCode);
    done();
  });

  const expected = options.metricsToken ? Buffer.from(`Bearer ${options.metricsToken}`) : undefined;
  fastify.get(METRICS_PATH, async (request, reply) => {
    if (expected && !sameSecret(request.headers.authorization, expected)) {
      return reply.code(401).header('www-authenticate', 'Bearer realm="metrics"').send({ error: 'Not authenticated' });
    }
    const { contentType, body } = await metrics.scrape();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });
}

/** Whether `header` is exactly `expected`, compared in constant time. */
function sameSecret(header: string | undefined, expected: Buffer): boolean {
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
