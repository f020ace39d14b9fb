/**
 * GraphQL over HTTP (graphql-yoga: POST/GET, GraphiQL, SSE) and over WebSocket (graphql-ws),
 * sharing one envelope so plugins and context are the same on both.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer } from 'ws';
import type { ContextFactory, GraphQLContext } from './context.ts';
import { createMaskError } from './errors.ts';
import { isLiveEvent } from '../events/pubsub.ts';
import { useSharedSubscriptionResults } from './shared-subscription-results.ts';

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
}

/**
 * Builds Yoga and the graphql-ws server for a schema.
 * @param options.graphiql serve GraphiQL on GET /graphql from a browser
 */
export function createGraphQLServer(options: {
  schema: GraphQLSchema;
  contextFactory: ContextFactory;
  logger: FastifyBaseLogger;
  graphiql: boolean;
}): GraphQLServer {
  const { logger } = options;
  const yoga = createYoga<YogaServerContext, GraphQLContext>({
    schema: options.schema,
    graphqlEndpoint: GRAPHQL_PATH,
    graphiql: options.graphiql ? { title: 'Signet GraphQL', subscriptionsProtocol: 'WS' } : false,
    landingPage: false,
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(' ')),
      info: (...args) => logger.info(args.map(String).join(' ')),
      warn: (...args) => logger.warn(args.map(String).join(' ')),
      // Yoga logs here the cause of every error it masks.
      error: (...args) =>
        args[0] instanceof Error
          ? logger.error({ err: args[0] }, 'unexpected error in a GraphQL operation')
          : logger.error(args.map(String).join(' ')),
    },
    maskedErrors: { maskError: createMaskError() },
    // One execution per live event and operation for all of a caller's identical subscriptions.
    plugins: [
      useSharedSubscriptionResults<GraphQLContext>({
        isShared: isLiveEvent,
        callerKey: (ctx) => (ctx.viewer ? `${ctx.viewer.account.id}:${ctx.viewer.user.id}` : undefined),
      }),
    ],
    context: async (initial) => {
      const upgrade = initial.upgradeRequest;
      return options.contextFactory({
        header: (name) =>
          initial.request ? initial.request.headers.get(name) : (upgrade?.headers[name] as string | undefined),
        ip: initial.ip ?? upgrade?.socket.remoteAddress,
        connectionParams: initial.connectionParams,
      });
    },
  });

  const webSocketServer = new WebSocketServer({ noServer: true });
  const wsHandle = useServer(
    {
      execute: (args: any) => args.rootValue.execute(args),
      subscribe: (args: any) => args.rootValue.subscribe(args),
      onSubscribe: async (ctx, _id, payload) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          upgradeRequest: ctx.extra.request,
          connectionParams: ctx.connectionParams,
        } as YogaServerContext);
        const document = parse(payload.query);
        const errors = validate(schema, document);
        if (errors.length > 0) return errors;
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
