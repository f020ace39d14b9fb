/**
 * GraphQL over HTTP (graphql-yoga: POST/GET, GraphiQL with its assets served by Signet, SSE) and
 * over WebSocket (graphql-ws), sharing one envelope so plugins, limits (src/graphql/limits.ts)
 * and context are the same on both. The caller's context is built before the document is parsed,
 * because the limits depend on whether the caller has a valid API key.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { useServer } from 'graphql-ws/use/ws';
import { type DocumentNode, getOperationAST, GraphQLError, type GraphQLSchema } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer } from 'ws';
import type { Config } from '../config.ts';
import type { ContextFactory, GraphQLContext, RequestInfo } from './context.ts';
import { createMaskError, findAppError, isGraphQLOwnError, withExtensions } from './errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import { REQUEST_ID_HEADER, requestIdFor } from '../observability/request-ids.ts';
import type { RequestSpan, Tracing } from '../observability/tracing.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { isLiveEvent } from '../events/pubsub.ts';
import { useSharedSubscriptionResults } from './shared-subscription-results.ts';
import type { CredentialSessions } from '../accounts/credential-sessions.ts';
import { trackWebSocket, useCredentialRevocation } from './connections.ts';
import { useGraphQLLimits } from './limits.ts';
import { useKeyScopes } from './key-scopes.ts';
import { renderOfflineGraphiQL } from './graphiql.ts';
import type { IdempotencyKeys } from '../accounts/idempotency-keys.ts';
import { useIdempotencyKeys } from './idempotency.ts';
import { useHttpStatuses } from './http-statuses.ts';

export interface GraphQLServer {
  yoga: YogaServerInstance<YogaServerContext, GraphQLContext>;
  /** The graphql-ws server; attach HTTP upgrades for the GraphQL path to it. */
  webSocketServer: WebSocketServer;
  /** Closes every WebSocket connection. */
  close(): Promise<void>;
}

export const GRAPHQL_PATH = '/graphql';

export interface YogaServerContext {
  /** Present for HTTP requests. */
  request?: Request;
  ip?: string;
  /** Present for graphql-ws operations. */
  upgradeRequest?: IncomingMessage;
  connectionParams?: Record<string, unknown>;
  /** The caller's context, built before parsing (the limits depend on the caller); Yoga's context. */
  graphqlContext?: GraphQLContext;
  /** HTTP: the request's logger (its lines carry the request id), the context's logger. */
  log?: FastifyBaseLogger;
  /** HTTP with tracing on: the request's span, parent of the operation's. */
  span?: RequestSpan | undefined;
}

/**
 * Builds Yoga and the graphql-ws server for a schema.
 * @param options.graphiql serve GraphiQL on GET /graphql from a browser
 * @param options.introspection answer `__schema` / `__type` (config.graphql.introspection)
 * @param options.limits limits of one operation, with a valid API key and without (config.graphql.limits)
 * @param options.idempotencyKeys Idempotency-Key on mutations (src/graphql/idempotency.ts)
 */
export function createGraphQLServer(options: {
  schema: GraphQLSchema;
  contextFactory: ContextFactory;
  logger: FastifyBaseLogger;
  graphiql: boolean;
  /**
   * Open sessions by credential: WebSockets and SSE streams end when theirs is revoked (src/graphql/connections.ts).
   */
  sessions?: CredentialSessions;
  introspection: boolean;
  limits: Config['graphql']['limits'];
  /** `Idempotency-Key` on mutations over HTTP (src/graphql/idempotency.ts); without it the header is ignored. */
  idempotencyKeys?: IdempotencyKeys;
  /** Counts each operation by type and name, with its duration (src/observability/metrics.ts). */
  metrics?: Metrics;
  /** With tracing on: a span per operation, a child of its request's. */
  tracing?: Tracing | undefined;
}): GraphQLServer {
  const { logger } = options;
  const loggedErrors = new WeakSet<Error>();
  // One logger (one request id) per WebSocket connection, for all its operations.
  const connectionLoggers = new WeakMap<IncomingMessage, FastifyBaseLogger>();
  const connectionLogger = (upgrade: IncomingMessage): FastifyBaseLogger => {
    let child = connectionLoggers.get(upgrade);
    if (!child) {
      child = logger.child({ reqId: requestIdFor(upgrade.headers[REQUEST_ID_HEADER]) });
      connectionLoggers.set(upgrade, child);
    }
    return child;
  };
  const buildContext = (initial: YogaServerContext, request = initial.request): Promise<GraphQLContext> => {
    const upgrade = initial.upgradeRequest;
    const info: RequestInfo = {
      header: (name) => (request ? request.headers.get(name) : (upgrade?.headers[name] as string | undefined)),
      ip: initial.ip ?? upgrade?.socket.remoteAddress,
      connectionParams: initial.connectionParams,
      // A WebSocket's operations log with the id of the request that opened it (its X-Request-Id, or a new one).
      logger: initial.log ?? (upgrade ? connectionLogger(upgrade) : undefined),
    };
    return options.contextFactory(info);
  };
  const yoga = createYoga<YogaServerContext, GraphQLContext>({
    schema: options.schema,
    graphqlEndpoint: GRAPHQL_PATH,
    graphiql: options.graphiql ? { title: 'Signet GraphQL', subscriptionsProtocol: 'WS' } : false,
    // GraphiQL's assets come from Signet, not a CDN: it works offline (src/graphql/graphiql.ts).
    renderGraphiQL: renderOfflineGraphiQL,
    landingPage: false,
    // CORS is src/http/cors.ts's (an allow-list); Yoga's default would echo any origin with credentials.
    cors: false,
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(' ')),
      info: (...args) => logger.info(args.map(String).join(' ')),
      warn: (...args) => logger.warn(args.map(String).join(' ')),
      // Yoga logs here the cause of every error it masks or maps (a database outage: a warning).
      // An error raised before execution (the context, built in onParams) reaches this twice, from
      // Yoga's maskError wrapper and from its handleError (graphql-yoga 5): each is logged once.
      error: (...args) => {
        const [error] = args;
        if (!(error instanceof Error)) return logger.error(args.map(String).join(' '));
        if (loggedErrors.has(error)) return;
        loggedErrors.add(error);
        if (isDatabaseUnavailable(error)) logger.warn({ err: error }, 'GraphQL operation failed: service unavailable');
        else logger.error({ err: error }, 'unexpected error in a GraphQL operation');
      },
    },
    maskedErrors: { maskError: createMaskError() },
    // useGraphQLLimits caches parsed and validated documents per tier of caller instead.
    parserAndValidationCache: false,
    plugins: [
      {
        // Before parsing: which limits apply depends on the caller. Errors (a database outage)
        // reach Yoga's error handling as they would from the context factory.
        async onParams({ context, request }) {
          (context as YogaServerContext).graphqlContext ??= await buildContext(context as YogaServerContext, request);
        },
      },
      useGraphQLLimits({
        limits: options.limits,
        introspection: options.introspection,
        isAuthenticated: (context) => Boolean((context as YogaServerContext | undefined)?.graphqlContext?.viewer),
      }),
      // One execution per live event and operation for all of a caller's identical subscriptions.
      useSharedSubscriptionResults<GraphQLContext>({
        isShared: isLiveEvent,
        // Keys of one user limited to other folders see other events: the folders are part of the caller.
        callerKey: (ctx) =>
          ctx.viewer
            ? `${ctx.viewer.account.id}:${ctx.viewer.user.id}:${ctx.viewer.folders?.ids.join(',') ?? '*'}`
            : undefined,
      }),
      ...(options.sessions ? [useCredentialRevocation(options.sessions)] : []),
      useOperationObservation({ metrics: options.metrics, tracing: options.tracing, loggedErrors }),
      ...(options.idempotencyKeys ? [useIdempotencyKeys(options.idempotencyKeys)] : []),
      // The HTTP status of each answer by the media type accepted (GraphQL over HTTP).
      useHttpStatuses(),
      // The scope each operation needs of the caller's key (requireViewer checks it).
      useKeyScopes(),
    ],
    context: (initial) => initial.graphqlContext ?? buildContext(initial),
  });

  const webSocketServer = new WebSocketServer({ noServer: true });
  const wsHandle = useServer(
    {
      execute: (args: any) => args.rootValue.execute(args),
      subscribe: (args: any) => args.rootValue.subscribe(args),
      onSubscribe: async (ctx, _id, payload) => {
        const initial: YogaServerContext = {
          upgradeRequest: ctx.extra.request,
          connectionParams: ctx.connectionParams,
        };
        initial.graphqlContext = await buildContext(initial);
        if (options.sessions) trackWebSocket(options.sessions, ctx.extra.socket, initial.graphqlContext.viewer);
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped(initial);
        let document: DocumentNode;
        try {
          document = parse(payload.query);
        } catch (error) {
          // A syntax error or a limit (tokens) answers this operation; the socket stays open.
          if (error instanceof GraphQLError) return [withoutHttpExtensions(error)];
          throw error;
        }
        const errors = validate(schema, document);
        if (errors.length > 0) return errors.map(withoutHttpExtensions);
        return {
          schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe },
        };
      },
    },
    webSocketServer,
  );

  return {
    yoga,
    webSocketServer,
    async close() {
      await wsHandle.dispose();
      await new Promise<void>((resolve) => webSocketServer.close(() => resolve()));
    },
  };
}

/**
 * Observes each executed operation (HTTP and WebSocket; subscriptions as they start): its type,
 * name and duration in the metrics, a span with tracing on, and the unexpected errors it ended with
 * logged through the operation's context logger (so the line carries the request id; Yoga's own
 * log of those errors then skips them: `loggedErrors`). Runs before Yoga masks the errors.
 */
function useOperationObservation(options: {
  metrics: Metrics | undefined;
  tracing: Tracing | undefined;
  loggedErrors: WeakSet<Error>;
}): Plugin {
  const begin = (args: { document: DocumentNode; operationName?: string | null; contextValue: unknown }) => {
    const operation = getOperationAST(args.document, args.operationName);
    const type = operation?.operation ?? 'unknown';
    const name = operation?.name?.value;
    const context = args.contextValue as Partial<GraphQLContext & YogaServerContext>;
    const span = options.tracing?.startSpan(
      name ? `${type} ${name}` : type,
      { 'graphql.operation.type': type, ...(name ? { 'graphql.operation.name': name } : {}) },
      context.span,
    );
    const startedAt = performance.now();
    return (errors: readonly GraphQLError[] | undefined, thrown = false) => {
      const failed = thrown || Boolean(errors?.length);
      options.metrics?.graphqlOperation(type, name, (performance.now() - startedAt) / 1000, failed);
      span?.end(failed);
      for (const error of errors ?? []) {
        if (findAppError(error) || isGraphQLOwnError(error) || options.loggedErrors.has(error)) continue;
        options.loggedErrors.add(error);
        if (error.originalError) options.loggedErrors.add(error.originalError);
        context.logger?.error({ err: error.originalError ?? error }, 'unexpected error in a GraphQL operation');
      }
    };
  };
  return {
    onExecute({ args }) {
      const end = begin(args);
      return {
        onExecuteDone({ result }) {
          end(Symbol.asyncIterator in result ? undefined : result.errors);
        },
      };
    },
    onSubscribe({ args }) {
      const end = begin(args);
      return {
        onSubscribeResult({ result }) {
          end(Symbol.asyncIterator in result ? undefined : result.errors);
        },
        // Counted as failed; the error itself is Yoga's to mask and log.
        onSubscribeError() {
          end(undefined, true);
        },
      };
    },
  };
}

/**
 * The error without `extensions.http`: Yoga notes there how an HTTP answer carries the error
 * (its status) and removes it from HTTP bodies; graphql-ws sends errors as they are.
 */
function withoutHttpExtensions(error: GraphQLError): GraphQLError {
  if (!error.extensions || !('http' in error.extensions)) return error;
  const { http: _http, ...extensions } = error.extensions;
  return withExtensions(error, extensions);
}
