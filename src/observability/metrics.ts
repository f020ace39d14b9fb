/**
 * The service's Prometheus metrics (GET /metrics, src/http/metrics-route.ts), with `prom-client`,
 * the Prometheus client Prometheus' own documentation lists for Node.js: its text exposition format,
 * histograms and the process metrics (CPU, memory, event-loop lag, file descriptors) come with it.
 *
 * One Metrics object per service instance (buildApp makes it; tests may run several in one process),
 * each with its own registry. What is counted where:
 *   - HTTP requests by method, route pattern (`/api/submissions/:id`, never the raw URL: bounded) and
 *     status, with their durations: Fastify's onResponse hook (src/http/metrics-route.ts);
 *   - GraphQL operations by type and name (names bounded: MAX_OPERATION_NAMES, then `other`), with
 *     durations and whether the result had errors: a Yoga plugin (src/graphql/server.ts);
 *   - job runs by name and outcome with durations (the complete-submission job's are the completion
 *     durations): buildApp wraps each handler it defines;
 *   - webhook attempts by outcome (src/webhooks/deliver-webhook.ts), emails and SMS by provider and
 *     outcome (buildApp wraps the mailer and the SMS sender);
 *   - at each scrape (refreshers): the job queue's depth and oldest due job, the outbox, and the
 *     PostgreSQL pools' connections (the service's and the job store's).
 * The counters are this instance's: Prometheus sums them over the instances it scrapes. The queue's
 * gauges are the shared store's, the same on every instance (aggregate them with max, not sum).
 */
import client from 'prom-client';

/** Seconds: from 5 ms (a cached read) to 10 s (the gateway's slowest uploads). */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds: jobs run from milliseconds (a webhook) to minutes (a large completion). */
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Distinct GraphQL operation names kept as labels per instance; later new names count as `other`. */
export const MAX_OPERATION_NAMES = 200;
/** A GraphQL operation name kept as a label: a GraphQL Name of at most 64 characters. */
const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

/** Outcomes of one provider call for an email or an SMS. */
export type MessageOutcome = 'sent' | 'failed_retryable' | 'refused';
/** Outcomes of one webhook attempt: accepted (< 400), failed with a retry scheduled, failed for good. */
export type WebhookAttemptOutcome = 'succeeded' | 'retrying' | 'failed';

export interface Metrics {
  /** The registry /metrics writes out. */
  readonly registry: client.Registry;
  /**
   * One HTTP request answered.
   * @param route the route's pattern (Fastify's routeOptions.url), or undefined when no route matched
   */
  httpRequest(method: string, route: string | undefined, statusCode: number, seconds: number): void;
  /** One GraphQL operation executed over HTTP or WebSocket (subscriptions: counted when they start). */
  graphqlOperation(type: string, name: string | undefined, seconds: number, hadErrors: boolean): void;
  /** One run of a job handler: `ok`, or `error` (retried or given up per its definition). */
  jobRun(name: string, outcome: 'ok' | 'error', seconds: number): void;
  webhookAttempt(outcome: WebhookAttemptOutcome): void;
  message(channel: 'email' | 'sms', provider: string, outcome: MessageOutcome): void;
  /** Adds work done before each scrape (reading the job queue, the pools); its failure is logged, not scraped. */
  onScrape(refresh: (gauges: ScrapeGauges) => Promise<void> | void): void;
  /** Runs the onScrape refreshers, then writes the registry in Prometheus' text format. */
  scrape(): Promise<{ contentType: string; body: string }>;
  /** Empties the registry (a stopped instance's metrics are not scraped again). */
  close(): void;
}

/** The gauges the refreshers set before each scrape. */
export interface ScrapeGauges {
  /** `due` (waiting for an instance) and `running` jobs by name. */
  jobs: client.Gauge<'job' | 'state'>;
  /** Seconds the oldest due job has waited (0: none due). */
  oldestDueJob: client.Gauge;
  outboxRows: client.Gauge;
  /** Connections by pool (`service`, `jobs`) and state (`in_use`, `idle`); requests `waiting` for one. */
  poolConnections: client.Gauge<'pool' | 'state'>;
}

/**
 * Creates one instance's metrics, with Node's process metrics (prom-client's collectDefaultMetrics).
 * @param options.onRefreshError where a failed refresher is reported (the scrape goes on without its gauges)
 */
export function createMetrics(options: { onRefreshError?: (error: unknown) => void } = {}): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const httpDuration = new client.Histogram({
    name: 'signet_http_request_duration_seconds',
    help: 'HTTP requests answered, by method, route pattern and status code, and their durations',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  const graphqlDuration = new client.Histogram({
    name: 'signet_graphql_operation_duration_seconds',
    help: 'GraphQL operations executed, by type, name (bounded; `other` past the limit) and outcome',
    labelNames: ['operation_type', 'operation_name', 'outcome'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  const jobDuration = new client.Histogram({
    name: 'signet_job_run_duration_seconds',
    help: 'Job runs by job name and outcome, and their durations (complete-submission: completion durations)',
    labelNames: ['job', 'outcome'] as const,
    buckets: JOB_BUCKETS,
    registers: [registry],
  });
  const webhookAttempts = new client.Counter({
    name: 'signet_webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome (succeeded, retrying, failed: given up)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const messages = new client.Counter({
    name: 'signet_messages_total',
    help: 'Emails and SMS handed to their provider, by channel, provider and outcome',
    labelNames: ['channel', 'provider', 'outcome'] as const,
    registers: [registry],
  });
  const gauges: ScrapeGauges = {
    jobs: new client.Gauge({
      name: 'signet_jobs',
      help: 'Jobs in the shared store by name and state (due: waiting for an instance; running: locked)',
      labelNames: ['job', 'state'] as const,
      registers: [registry],
    }),
    oldestDueJob: new client.Gauge({
      name: 'signet_jobs_oldest_due_age_seconds',
      help: 'Seconds the oldest due job has waited for an instance (0: none due)',
      registers: [registry],
    }),
    outboxRows: new client.Gauge({
      name: 'signet_outbox_rows',
      help: 'Jobs committed in the outbox and not yet moved into the job store',
      registers: [registry],
    }),
    poolConnections: new client.Gauge({
      name: 'signet_db_pool_connections',
      help: 'PostgreSQL pool connections by pool (service, jobs) and state (in_use, idle, waiting: requests queued)',
      labelNames: ['pool', 'state'] as const,
      registers: [registry],
    }),
  };
  const refreshers: ((gauges: ScrapeGauges) => Promise<void> | void)[] = [];
  const operationNames = new Set<string>();
  const operationLabel = (name: string | undefined): string => {
    if (!name) return 'anonymous';
    if (operationNames.has(name)) return name;
    if (!OPERATION_NAME.test(name) || operationNames.size >= MAX_OPERATION_NAMES) return 'other';
    operationNames.add(name);
    return name;
  };

  return {
    registry,
    httpRequest(method, route, statusCode, seconds) {
      httpDuration.observe({ method, route: route ?? 'unmatched', status_code: statusCode }, seconds);
    },
    graphqlOperation(type, name, seconds, hadErrors) {
      graphqlDuration.observe(
        { operation_type: type, operation_name: operationLabel(name), outcome: hadErrors ? 'error' : 'ok' },
        seconds,
      );
    },
    jobRun(name, outcome, seconds) {
      jobDuration.observe({ job: name, outcome }, seconds);
    },
    webhookAttempt(outcome) {
      webhookAttempts.inc({ outcome });
    },
    message(channel, provider, outcome) {
      messages.inc({ channel, provider, outcome });
    },
    onScrape(refresh) {
      refreshers.push(refresh);
    },
    async scrape() {
      gauges.jobs.reset();
      gauges.poolConnections.reset();
      await Promise.all(
        refreshers.map(async (refresh) => {
          try {
            await refresh(gauges);
          } catch (error) {
            options.onRefreshError?.(error);
          }
        }),
      );
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    close() {
      registry.clear();
    },
  };
}
