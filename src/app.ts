/**
 * Assembles the HTTP service: Fastify hosting GraphQL (Yoga + graphql-ws on /graphql), /health,
 * `GET /` (the service, its version and links), the signing page and files, and the HTTP APIs the
 * composition root passes in (`apis`: the DocuSeal REST API of rest-compat, which depends on
 * src/ and not the other way round). Returns `{ fastify, start, stop }`; main.ts only starts it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { GraphQLSchema } from 'graphql';
import type { Config } from './config.ts';
import { type Db, poolUsage } from './db/client.ts';
import { type ContextFactory, createContextFactory } from './graphql/context.ts';
import { schema } from './graphql/schema/index.ts';
import { createGraphQLServer, GRAPHQL_PATH } from './graphql/server.ts';
import { sendGraphQLRequestError } from './graphql/http-statuses.ts';
import { registerHealthRoute } from './http/health.ts';
import { registerServiceIndexRoute } from './http/service-index.ts';
import { registerErrorHandler } from './http/errors.ts';
import { registerCors } from './http/cors.ts';
import { registerFileRoutes } from './documents/file-routes.ts';
import { registerSigningPageRoutes } from './signing-form/page-routes.ts';
import { createFileUrlSigner, type FileUrlSigner } from './documents/file-urls.ts';
import { resolveSecretKeyBase } from './documents/secret-key.ts';
import { openFileStorage } from './documents/open-storage.ts';
import type { FileStorage } from './documents/storage.ts';
import { defineUnusedFilesJob } from './documents/unused-files.ts';
import { createRenderer, type Renderer } from './rendering/renderer.ts';
import { createJobQueue, type JobQueue, observeJobRuns } from './jobs/job-queue.ts';
import { createSideEffects, type SideEffects } from './events/events.ts';
import { createLiveEvents, type LiveEvents } from './events/pubsub.ts';
import { createCredentialSessions } from './accounts/credential-sessions.ts';
import { createIdempotencyKeys, type IdempotencyKeys } from './accounts/idempotency-keys.ts';
import { createMailer } from './notifications/mailer.ts';
import { observeSends } from './notifications/observed-sender.ts';
import { createSmsSender } from './notifications/sms.ts';
import { registerObservability, requestSpanOf } from './http/observability.ts';
import { createMetrics, type Metrics } from './observability/metrics.ts';
import { requestIdFor, REQUEST_ID_HEADER } from './observability/request-ids.ts';
import { startTracing } from './observability/tracing.ts';
import { AppError } from './errors.ts';
import { configureParsePool } from './parse-pool/pool.ts';
import { configureCjkFont } from './documents/fonts.ts';
import { LARGE_BODY_BYTES, parseJsonBody } from './http/json-body.ts';
import { PROJECT_ROOT } from './paths.ts';
import { type CompletionHooks, defineCompletionJob } from './signing/complete-submission.ts';
import { defineCompletedEmailsJob } from './signing/completed-emails.ts';
import { defineDeclinedEmailJob } from './signing/declined-email.ts';
import { registerPkiRoutes } from './signing/pki-routes.ts';
import { createSignerUploadSweepSchedule, defineSignerUploadSweep } from './signing-form/sweep-signer-uploads.ts';
import { createEmailClickTags } from './submissions/signing-links.ts';
import { defineSubmissionJobs } from './submissions/send-requests.ts';
import { createReminderScanner, defineReminderJobs } from './submissions/reminders.ts';
import { type Clock, systemClock } from './util/clock.ts';
import { defineBulkSendJobs } from './submissions/bulk-send-job.ts';
import { defineWebhookJobs } from './webhooks/dispatch-event.ts';

export interface AppOptions {
  config: Config;
  db: Db;
  /** A pino logger to use; default: a new one at config.logLevel. */
  logger?: FastifyBaseLogger;
  /**
   * HTTP APIs mounted beside GraphQL, registered after the service's own routes, each given the
   * service's parts (e.g. rest-compat's `docusealRestApi()`, mounted at /api).
   */
  apis?: HttpApi[];
  /**
   * File storage; default: openFileStorage(config) — S3 with STORAGE_URL (its bucket checked: a
   * missing one rejects buildApp with an Error naming it), else local disk under config.dataDir/files.
   */
  storage?: FileStorage;
  /** Signs and verifies file URLs; default: from config (appUrl, fileUrlTtl, resolveSecretKeyBase). */
  signer?: FileUrlSigner;
  /** HTML/DOCX → PDF; default: createRenderer(config) (Gotenberg or local Chromium/LibreOffice). */
  renderer?: Renderer;
  /**
   * Background jobs; default: createJobQueue on config.databaseUrl (MongoDB when
   * config.jobsMongodbUrl is set). Required when config.databaseUrl is unset (embedded PostgreSQL).
   * start() starts it and stop() stops it, whoever created it.
   */
  jobs?: JobQueue;
  /** Tests only: seams in the completion job (src/signing/complete-submission.ts CompletionHooks). */
  completionHooks?: CompletionHooks;
  /**
   * The time reminders (src/submissions/reminders.ts) and Idempotency-Key locks and expiries
   * (src/accounts/idempotency-keys.ts) are judged by; default: the machine's clock. Tests pass one
   * they move forward instead of waiting hours.
   */
  clock?: Clock;
  /** This instance's metrics (GET /metrics); default: new ones (src/observability/metrics.ts). */
  metrics?: Metrics;
}

/**
 * What an HTTP API mounted by buildApp gets: the schema and context its operations run with, and
 * the service's parts.
 */
export interface AppServices {
  config: Config;
  db: Db;
  schema: GraphQLSchema;
  contextFactory: ContextFactory;
  storage: FileStorage;
  signer: FileUrlSigner;
  /** Idempotency-Key state (src/accounts/idempotency-keys.ts), for POST and PUT routes. */
  idempotencyKeys: IdempotencyKeys;
}

/** An HTTP API: registers its routes on the service's Fastify instance. */
export type HttpApi = (fastify: FastifyInstance, services: AppServices) => Promise<void>;

export interface App {
  fastify: FastifyInstance;
  /** File storage and URL signer, for services that store files or mint `/file/...` URLs. */
  files: { storage: FileStorage; signer: FileUrlSigner };
  /** Background jobs: services enqueue here (also ctx.jobs); handlers are defined on it. */
  jobs: JobQueue;
  /** Live events for GraphQL subscriptions (in process, or through Redis with REDIS_URL). */
  live: LiveEvents;
  /** Changes with side effects (the outbox; what services get as ctx.effects). */
  effects: SideEffects;
  /** Idempotency-Key state: deleteExpired() is what the hourly sweep runs. */
  idempotencyKeys: IdempotencyKeys;
  /** This instance's metrics, as GET /metrics writes them. */
  metrics: Metrics;
  /**
   * The reminder scan of this instance (every REMINDER_SCAN_SECONDS once started): `scan()` runs
   * one now and resolves to the reminders it recorded.
   */
  reminders: { scan(): Promise<number> };
  /** Starts the job queue, then listens on config.host:config.port (0 = any free port); resolves to the base URL. */
  start(options?: { port?: number; host?: string }): Promise<string>;
  /**
   * Graceful stop: refuses new connections, lets in-flight requests finish (up to
   * config.shutdownTimeout, then closes what is left), closes WebSockets, stops the job queue
   * (running jobs get config.shutdownTimeout too) and closes the database client.
   */
  stop(): Promise<void>;
}

export async function buildApp(options: AppOptions): Promise<App> {
  const { config, db } = options;
  // Where uploads, certificates and the tools' files are parsed: worker threads with limits (PARSE_*).
  configureParsePool(config.parsePool);
  // The face of zh/ja/ko audit logs and CJK values (FONT_CJK_PATH, FONT_CJK_NAME).
  configureCjkFont(config.cjkFont);
  const storage = options.storage ?? (await openFileStorage(config));
  const secretKeyBase = await resolveSecretKeyBase(config);
  const signer =
    options.signer ??
    createFileUrlSigner({
      appUrl: config.appUrl,
      secret: secretKeyBase,
      ttlMs: config.fileUrlTtl,
    });
  // The `t` tag of signing links in request emails ("Email link clicked").
  const emailClicks = createEmailClickTags(secretKeyBase);
  const fastify = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: { level: config.logLevel } }),
    bodyLimit: config.maxBodySize,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // The request id on every log line of the request (`reqId`) and in X-Request-Id (src/http/observability.ts).
    genReqId: (request) => requestIdFor(request.headers[REQUEST_ID_HEADER]),
  });

  // Before any route: CORS for /api, /graphql and /file, from CORS_ORIGINS only (src/http/cors.ts).
  await registerCors(fastify, { origins: config.corsOrigins });
  // Metrics, request ids and (OTEL_EXPORTER_OTLP_ENDPOINT) traces of every route below; GET /metrics.
  const metrics =
    options.metrics ??
    createMetrics({
      onRefreshError: (error) => fastify.log.warn({ err: error }, 'metrics: a gauge could not be read'),
    });
  const tracing = config.tracing
    ? await startTracing({ ...config.tracing, serviceVersion: packageVersion() })
    : undefined;
  registerObservability(fastify, { metrics, metricsToken: config.metricsToken, tracing });

  const renderer = options.renderer ?? createRenderer(config, fastify.log);
  const queue = options.jobs ?? defaultJobQueue(config, fastify.log);
  // The jobs defined here: each run timed (metrics) and, with tracing, a span.
  const jobs = observeJobRuns(queue, (name) => {
    const span = tracing?.startSpan(`job ${name}`, { 'signet.job.name': name });
    const startedAt = performance.now();
    return (outcome) => {
      metrics.jobRun(name, outcome, (performance.now() - startedAt) / 1000);
      span?.end(outcome === 'error');
    };
  });
  const live = await createLiveEvents({
    db,
    logger: fastify.log,
    redis: config.redisUrl ? { url: config.redisUrl, secretKeyBase: await resolveSecretKeyBase(config) } : undefined,
  });
  // Changes with side effects: jobs and events written in the change's transaction (the outbox).
  const effects = createSideEffects({ db, jobs, live });
  // WebSockets and SSE streams end when the credential they opened with is revoked, on every
  // instance: PostgreSQL announces it (LISTEN from start() on).
  const sessions = createCredentialSessions({ db, logger: fastify.log, recheckMs: config.credentialsRecheck });
  // Jobs this service runs: signature requests by email/SMS, in order, and expiry.
  const mailer = observeSends(createMailer(config, fastify.log), (provider, outcome) =>
    metrics.message('email', provider, outcome),
  );
  defineCompletionJob(jobs, { db, storage, config, effects, logger: fastify.log, hooks: options.completionHooks });
  defineCompletedEmailsJob(jobs, { db, storage, mailer, config, logger: fastify.log });
  defineDeclinedEmailJob(jobs, { db, mailer, config, logger: fastify.log });
  // The bytes of stored files a permanent delete left without a row (src/documents/unused-files.ts).
  defineUnusedFilesJob(jobs, { db, storage });
  const clock = options.clock ?? systemClock;
  // Signers' uploads no value uses, removed once their form closed or they are old
  // (src/signing-form/sweep-signer-uploads.ts).
  defineSignerUploadSweep(jobs, {
    db,
    effects,
    clock,
    unusedAfter: config.signerUploads.unusedAfter,
    logger: fastify.log,
  });
  const uploadSweeps = createSignerUploadSweepSchedule({
    jobs,
    intervalMs: config.signerUploads.sweepInterval,
    logger: fastify.log,
  });
  const sendDeps = {
    db,
    mailer,
    smsSender: observeSends(createSmsSender(config, fastify.log), (provider, outcome) =>
      metrics.message('sms', provider, outcome),
    ),
    config,
    logger: fastify.log,
    effects,
    emailClicks,
    clock,
  };
  defineSubmissionJobs(jobs, sendDeps);
  // Reminders: the scan records them in the outbox, the send-reminder job sends each.
  defineReminderJobs(jobs, sendDeps);
  const reminderScanner = createReminderScanner({
    db,
    effects,
    clock,
    intervalMs: config.reminderScanInterval,
    logger: fastify.log,
  });
  // Bulk sends: their rows made into submissions, a batch at a time (src/submissions/bulk-send-job.ts).
  defineBulkSendJobs(jobs, { db, storage, effects, live, config, logger: fastify.log });
  const contextFactory = createContextFactory({
    db,
    config,
    logger: fastify.log,
    files: signer,
    emailClicks,
    storage,
    renderer,
    jobs,
    effects,
    live,
    clock,
  });
  // Idempotency-Key on POST/PUT under /api and GraphQL mutations, kept in PostgreSQL (docs/idempotency.md).
  const idempotencyKeys = createIdempotencyKeys({
    db,
    logger: fastify.log,
    lockLifetimeMs: config.idempotencyLockLifetime,
    clock,
  });
  // Webhooks: each event's deliveries (dispatch-event), each delivery's attempts (deliver-webhook).
  defineWebhookJobs(jobs, {
    db,
    config,
    logger: fastify.log,
    files: signer,
    onAttempt: (outcome) => metrics.webhookAttempt(outcome),
  });
  // Read at each scrape: the shared job store and the pools of this instance.
  metrics.onScrape(async (gauges) => {
    const stats = await jobs.stats();
    for (const job of stats.jobs) {
      gauges.jobs.set({ job: job.name, state: 'due' }, job.due);
      gauges.jobs.set({ job: job.name, state: 'running' }, job.running);
    }
    gauges.oldestDueJob.set(Math.max(0, ...stats.jobs.map((job) => job.oldestDueSeconds)));
    gauges.outboxRows.set(stats.outboxRows);
    const pools = [{ name: 'service', ...poolUsage(db) }, ...(stats.pool ? [{ name: 'jobs', ...stats.pool }] : [])];
    for (const pool of pools) {
      gauges.poolConnections.set({ pool: pool.name, state: 'in_use' }, pool.total - pool.idle);
      gauges.poolConnections.set({ pool: pool.name, state: 'idle' }, pool.idle);
      gauges.poolConnections.set({ pool: pool.name, state: 'waiting' }, pool.waiting);
    }
  });
  const graphql = createGraphQLServer({
    schema,
    contextFactory,
    logger: fastify.log,
    graphiql: config.graphiql,
    introspection: config.graphql.introspection,
    limits: config.graphql.limits,
    sessions,
    idempotencyKeys,
    metrics,
    tracing,
  });

  // GraphQL over HTTP, in a scope of its own: a JSON body over 1 MB (base64 files for verifyPdf,
  // mergePdfs) is parsed in the parse pool, not on the event loop (src/http/json-body.ts); smaller
  // ones, and every error, as Fastify parses them.
  await fastify.register(async (scope) => {
    const parseJson = scope.getDefaultJsonParser('error', 'ignore');
    scope.addContentTypeParser(
      'application/json',
      { parseAs: 'buffer', bodyLimit: config.maxBodySize },
      (request: FastifyRequest, body: string | Buffer, done: (error: Error | null, value?: unknown) => void) => {
        const bytes = typeof body === 'string' ? Buffer.from(body) : body;
        if (bytes.length <= LARGE_BODY_BYTES) return parseJson(request, bytes.toString('utf8'), done);
        parseJsonBody(bytes, request.ip).then(
          (value) => done(null, value),
          // A body that is not JSON: Fastify's answer (400), whoever parsed it; the pool's limits as they are.
          (error: Error) =>
            done(
              error instanceof AppError && error.message.startsWith('JSON parse error')
                ? Object.assign(new SyntaxError(error.message), { statusCode: 400 })
                : error,
              undefined,
            ),
        );
      },
    );
    scope.route({
      url: GRAPHQL_PATH,
      // OPTIONS (CORS preflights) is answered by src/http/cors.ts.
      method: ['GET', 'POST'],
      // Bodies Fastify refused before GraphQL saw them answer as GraphQL errors (src/graphql/http-statuses.ts).
      errorHandler: (error, request, reply) => {
        const status = (error as { statusCode?: number }).statusCode ?? 500;
        if (status < 400 || status >= 500) throw error;
        const tooLarge = status === 413;
        const message = tooLarge
          ? `Request body is too large (limit ${Math.round((config.maxBodySize / 1024 / 1024) * 10) / 10} MB)`
          : (error as Error).message;
        return sendGraphQLRequestError(request, reply, {
          status,
          message,
          code: tooLarge ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST',
        });
      },
      handler: async (request, reply) => {
        const response = await graphql.yoga.handleNodeRequestAndResponse(request, reply, {
          ip: request.ip,
          log: request.log,
          span: requestSpanOf(request),
        });
        response.headers.forEach((value, key) => {
          reply.header(key, value);
        });
        // Yoga's refusals without a body (415 a content type it does not read, 406 not acceptable).
        if (!response.body && response.status >= 400) {
          return sendGraphQLRequestError(request, reply, {
            status: response.status,
            message: BODYLESS_REFUSALS[response.status] ?? response.statusText ?? 'Request refused',
            code: 'BAD_REQUEST',
          });
        }
        reply.status(response.status);
        // Streams (SSE, multipart incremental delivery) are piped; a single result is sent whole,
        // with a content-length, which spares the stream machinery and chunked encoding.
        const contentType = response.headers.get('content-type') ?? '';
        if (response.body && !/event-stream|multipart/.test(contentType)) {
          return reply.send(Buffer.from(await response.arrayBuffer()));
        }
        return reply.send(response.body);
      },
    });
  });

  fastify.server.on('upgrade', (request, socket, head) => {
    const pathname = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (pathname !== GRAPHQL_PATH) {
      socket.destroy();
      return;
    }
    graphql.webSocketServer.handleUpgrade(request, socket, head, (ws) => {
      graphql.webSocketServer.emit('connection', ws, request);
    });
  });

  // Errors of the routes below that the REST gateway and GraphQL do not map themselves.
  registerErrorHandler(fastify);
  registerHealthRoute(fastify, db);
  registerServiceIndexRoute(fastify, { graphiql: config.graphiql });
  registerFileRoutes(fastify, { db, storage, signer, presigned: config.fileUrlsPresigned });
  registerSigningPageRoutes(fastify, { db, maxUploadBytes: config.maxBodySize, embedOrigins: config.embedOrigins });
  // The own CA's CRL (issue 17; public, cacheable).
  registerPkiRoutes(fastify, { db, config });
  for (const api of options.apis ?? [])
    await api(fastify, { config, db, schema, contextFactory, storage, signer, idempotencyKeys });

  let stopping: Promise<void> | undefined;
  return {
    fastify,
    files: { storage, signer },
    jobs: queue,
    live,
    effects,
    idempotencyKeys,
    metrics,
    reminders: { scan: () => reminderScanner.scan() },
    async start(listen = {}) {
      await jobs.start();
      await sessions.start();
      idempotencyKeys.startSweeping();
      reminderScanner.start();
      uploadSweeps.start();
      return fastify.listen({ port: listen.port ?? config.port, host: listen.host ?? config.host });
    },
    stop() {
      stopping ??= (async () => {
        // Each step is bounded: SIGTERM must end the service even if one part of it hangs (the
        // step is then named in a warning, and what it held goes with the process).
        const step = (name: string, run: () => Promise<unknown>, limitMs: number) =>
          boundedStep(fastify.log, name, run, limitMs);
        // Subscriptions end first: an SSE response open until then would hold the HTTP close.
        live.endSubscriptions();
        await step('graphql-ws', () => graphql.close(), STOP_STEP_MS);
        // Keep-alive connections become idle once their in-flight request is answered: close
        // them as they do, and everything left when the timeout runs out.
        const sweep = setInterval(() => fastify.server.closeIdleConnections(), 50);
        const timer = setTimeout(() => fastify.server.closeAllConnections(), config.shutdownTimeout);
        try {
          await step('http', () => fastify.close(), config.shutdownTimeout + STOP_STEP_MS);
        } finally {
          clearInterval(sweep);
          clearTimeout(timer);
        }
        await step('reminder scan', () => reminderScanner.stop(), STOP_STEP_MS);
        uploadSweeps.stop();
        // After the HTTP server (requests in flight may enqueue), before the database (jobs use it).
        await step(
          'jobs',
          () => jobs.stop({ timeoutMs: config.shutdownTimeout }),
          config.shutdownTimeout + STOP_STEP_MS,
        );
        await step('credential sessions', () => sessions.close(), STOP_STEP_MS);
        idempotencyKeys.close();
        await step('live events', () => live.close(), STOP_STEP_MS);
        await step('renderer', () => renderer.close(), STOP_STEP_MS);
        await step('database', () => db.$disconnect(), STOP_STEP_MS);
        if (!options.storage) storage.close?.();
        // The spans of the last requests and jobs are sent before the process ends.
        if (tracing) await step('tracing', () => tracing.shutdown(), STOP_STEP_MS);
        metrics.close();
      })();
      return stopping;
    },
  };
}

/** What Yoga's refusals without a body mean, by status. */
const BODYLESS_REFUSALS: Record<number, string> = {
  415: 'Unsupported Media Type: send the request as JSON (Content-Type: application/json), or as GET.',
  406:
    'Not Acceptable: accept application/graphql-response+json or application/json ' +
    '(text/event-stream for a subscription).',
};

/** How long stop() waits for each of its steps beyond what the step itself is given (ms). */
const STOP_STEP_MS = 5000;

/**
 * Runs one step of stop(), waiting at most `limitMs`; past that, logs a warning naming the step
 * and resolves (the step goes on in the background, and ends with the process). A step that
 * fails is logged and does not stop the next ones.
 */
async function boundedStep(
  logger: FastifyBaseLogger,
  name: string,
  run: () => Promise<unknown>,
  limitMs: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), limitMs);
  });
  try {
    const outcome = await Promise.race([run().then(() => 'done' as const), late]);
    if (outcome === 'late')
      logger.warn({ step: name, waitedMs: limitMs }, 'stop: a step did not finish in time; going on');
  } catch (error) {
    logger.error({ err: error, step: name }, 'stop: a step failed; going on');
  } finally {
    clearTimeout(timer);
  }
}

function defaultJobQueue(config: Config, logger: FastifyBaseLogger): JobQueue {
  if (!config.databaseUrl)
    throw new Error('buildApp: pass `jobs` when config.databaseUrl is unset (embedded PostgreSQL)');
  return createJobQueue({
    connectionString: config.databaseUrl,
    mongodbUrl: config.jobsMongodbUrl,
    logger,
    poolSize: config.databasePoolSize,
  });
}

/** package.json's version (the traces' service.version). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}
