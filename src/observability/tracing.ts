/**
 * Optional OpenTelemetry tracing, off by default: with OTEL_EXPORTER_OTLP_ENDPOINT set, each HTTP
 * request is a SERVER span (named `GET /api/submissions/:id` after its route, OpenTelemetry's HTTP
 * semantic conventions), each GraphQL operation a child span of its request (`query Viewer`), and
 * each job run a span of its own; they are sent in batches over OTLP/HTTP (JSON) to
 * `<endpoint>/v1/traces`. An incoming W3C `traceparent` header makes the request's span a child of
 * the caller's, so a trace crosses Signet.
 *
 * The official packages: @opentelemetry/api, @opentelemetry/sdk-trace (tracer provider and batch
 * processor), @opentelemetry/exporter-trace-otlp-http, @opentelemetry/resources and
 * @opentelemetry/core (the traceparent parser). They are loaded only when tracing is on (dynamic
 * imports below): a service without it does not hold them in memory. Spans are parented explicitly
 * (the request's span is handed to its GraphQL operations), so no context manager (an
 * AsyncLocalStorage, a cost on every promise) is installed; spans are not made for database
 * statements or outgoing calls. The exporter also reads OTEL_EXPORTER_OTLP_HEADERS (e.g. a
 * collector's API key) as OpenTelemetry documents it. Spans are sent every 5 s and at shutdown.
 */
import type { Span } from '@opentelemetry/api';

/** An HTTP request's span. */
export interface RequestSpan {
  /** The span, as parent of the request's operations. */
  readonly span: Span;
  /** Ends it with the matched route (its name becomes `<method> <route>`) and the status code. */
  end(route: string | undefined, statusCode: number): void;
}

/** A span inside a request or a job: ended once with whether it failed. */
export interface ChildSpan {
  end(failed: boolean): void;
}

export interface Tracing {
  /**
   * Starts the SERVER span of a request.
   * @param traceparent the request's `traceparent` header (W3C Trace Context), when it has one
   */
  startRequest(method: string, path: string, traceparent: string | undefined): RequestSpan;
  /** Starts an INTERNAL span, a child of `parent` when given (a GraphQL operation in its request; a job run: none). */
  startSpan(name: string, attributes: Record<string, string | number>, parent?: RequestSpan): ChildSpan;
  /** Sends the spans still buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts tracing: loads the OpenTelemetry SDK and the OTLP/HTTP exporter (to `<endpoint>/v1/traces`,
 * as the OTLP exporter specification appends to OTEL_EXPORTER_OTLP_ENDPOINT).
 * @param options.serviceName the resource's `service.name` (OTEL_SERVICE_NAME)
 * @param options.serviceVersion `service.version` (package.json's version)
 */
export async function startTracing(options: {
  endpoint: string;
  serviceName: string;
  serviceVersion: string;
}): Promise<Tracing> {
  const [api, sdk, exporterModule, resources, core] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  const { SpanKind, SpanStatusCode, ROOT_CONTEXT, trace } = api;
  const exporter = new exporterModule.OTLPTraceExporter({ url: `${options.endpoint}/v1/traces` });
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': options.serviceName,
      'service.version': options.serviceVersion,
    }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter })],
  });
  const tracer = provider.getTracer('signet', options.serviceVersion);

  return {
    startRequest(method, path, traceparent) {
      const remote = traceparent ? core.parseTraceParent(traceparent) : null;
      const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, { ...remote, isRemote: true }) : ROOT_CONTEXT;
      const span = tracer.startSpan(
        method,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': path } },
        parent,
      );
      return {
        span,
        end(route, statusCode) {
          if (route) {
            span.updateName(`${method} ${route}`);
            span.setAttribute('http.route', route);
          }
          span.setAttribute('http.response.status_code', statusCode);
          // Server spans: 5xx is an error, 4xx the client's (OpenTelemetry's HTTP conventions).
          if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
    startSpan(name, attributes, parent) {
      const context = parent ? trace.setSpan(ROOT_CONTEXT, parent.span) : ROOT_CONTEXT;
      const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, context);
      return {
        end(failed) {
          if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}
