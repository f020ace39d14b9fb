/**
 * The REST compatibility gateway: DocuSeal's REST API on the wire, mounted at /api
 * (DESIGN.md "How a request flows").
 *
 * Each route is one named GraphQL operation, parsed and validated against the schema once at
 * start, executed with the caller's context, and a serializer that turns the result into
 * DocuSeal JSON (src/docuseal-shapes/). A route may instead call one domain service (`run`) with
 * the operation's coerced variables, where the GraphQL round-trip only costs. Routes hold no
 * business rules.
 *
 * Wire behaviour shared by every route (reference/docuseal-behaviour.md §2–3):
 * - bodies are parsed as JSON whatever the Content-Type; malformed JSON → 422 `{"error":"JSON parse error: ..."}`
 * - missing/bad key → 401 `{"error":"Not authenticated"}`; a key without the scope the route's
 *   operation needs (a mutation: `write`; a query: `read`) → 403 naming it (checkKeyScope)
 * - every path also answers with DocuSeal's `.json` suffix (`/templates.json`, `/submissions/1.json`)
 * - unknown route → 404 `{"status":404}`; body over the limit → 413 `{"error": ...}`
 * - database down → 503 `{"error":"Service unavailable, please try again later"}` with
 *   `Retry-After` (src/db/unavailable.ts), cause logged
 * - unexpected errors → 500 `{"status":500}`, cause logged
 * - POST/PUT with `Idempotency-Key`: the first answer replayed (./idempotency.ts, docs/idempotency.md)
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  type GraphQLError,
  getVariableValues,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  parse,
  validate,
} from 'graphql';
import { type ApiKeyScope, missingScope, scopeOfOperation } from '../src/accounts/key-scopes.ts';
import { AppError } from '../src/errors.ts';
import { parseJsonBody } from '../src/http/json-body.ts';
import type { ContextFactory, GraphQLContext } from '../src/graphql/context.ts';
import { findAppError, isGraphQLOwnError } from '../src/graphql/errors.ts';
import { INTERNAL_ERROR, restErrorFor, ROUTE_NOT_FOUND, sendRestError } from './errors.ts';
import type { IdempotencyKeys } from '../src/accounts/idempotency-keys.ts';
import { idempotencyRouteHooks, idempotentExecutionBegins } from './idempotency.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a route sees of the request. */
export interface RestRequest {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  /** Parsed JSON body (undefined when empty). */
  body: unknown;
  context: GraphQLContext;
}

export interface RestRoute<TData = any> {
  method: HttpMethod | HttpMethod[];
  /** Path under /api, in Fastify syntax ("/templates/:id"). */
  path: string;
  /** A GraphQL document with exactly one named operation. */
  operation: string;
  /** GraphQL variables from the request; may throw AppError (e.g. VALIDATION) for bad input. */
  variables?: (request: RestRequest) => Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Instead of executing `operation`: one domain service call, given the variables as the
   * operation would receive them (coerced by its variable definitions: the same checks and
   * messages). For routes where the GraphQL round-trip only costs; docs/architecture.md lists
   * them and why. Its result is what `serialize` gets.
   */
  run?: (variables: Record<string, unknown>, request: RestRequest) => Promise<TData>;
  /**
   * DocuSeal JSON from the operation's data, or a promise of it; a RawJson is sent as it is
   * (JSON text made earlier, e.g. the kept list items of rest-compat/serializers/submission-list.ts).
   */
  serialize: (data: TData, request: RestRequest) => unknown;
  /** Success status (default 200). */
  status?: number;
  /** Routes are authenticated unless this is false. */
  public?: boolean;
}

/** A response body that is JSON text already: the gateway sends it as it is. */
export class RawJson {
  /** @param text JSON text, as a string or as its UTF-8 bytes (cheaper to send when large) */
  constructor(readonly text: string | Buffer) {}
}

/** The context built in preParsing, for the handler. */
const contexts = new WeakMap<FastifyRequest, GraphQLContext>();

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
  operationName: string;
  operation: OperationDefinitionNode;
  /** The scope a key needs for the route: its operation's (checkKeyScope). */
  scope: ApiKeyScope;
}

export interface RestGatewayOptions {
  schema: GraphQLSchema;
  routes: RestRoute[];
  contextFactory: ContextFactory;
  /** Largest accepted body in bytes. */
  bodyLimit: number;
  prefix?: string;
  /** `Idempotency-Key` on POST and PUT routes (./idempotency.ts); without it the header is ignored. */
  idempotencyKeys?: IdempotencyKeys;
}

/**
 * Parses and validates every route's operation against the schema.
 * @throws Error at start naming the route when an operation is invalid or unnamed, or a GET route's is a mutation
 */
export function prepareRoutes(schema: GraphQLSchema, routes: RestRoute[]): PreparedRoute[] {
  return routes.map((route) => {
    const label = `${[route.method].flat().join(',')} ${route.path}`;
    const document = parse(route.operation);
    const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
    const operationName = operations.length === 1 ? operations[0]!.name?.value : undefined;
    if (!operationName) throw new Error(`REST route ${label}: the operation must be exactly one named operation`);
    const errors = validate(schema, document);
    if (errors.length > 0) {
      throw new Error(
        `REST route ${label}: invalid operation ${operationName}: ${errors.map((e) => e.message).join('; ')}`,
      );
    }
    const operation = operations[0] as OperationDefinitionNode;
    // A read-only key may GET anything: a GET that changes something would need `write` unseen.
    if ([route.method].flat().includes('GET') && operation.operation !== 'query')
      throw new Error(`REST route ${label}: a GET route's operation must be a query`);
    return { route, document, operationName, operation, scope: scopeOfOperation(operation.operation) };
  });
}

/** Registers the gateway (as an encapsulated Fastify plugin under `prefix`, default /api). */
export async function registerRestGateway(app: FastifyInstance, options: RestGatewayOptions): Promise<void> {
  const prepared = prepareRoutes(options.schema, options.routes);

  await app.register(
    async (api) => {
      // DocuSeal parses every /api body as JSON whatever the Content-Type (§2); a large one in the parse pool.
      api.removeAllContentTypeParsers();
      api.addContentTypeParser(
        '*',
        { parseAs: 'buffer', bodyLimit: options.bodyLimit },
        async (request: FastifyRequest, body: string | Buffer) =>
          parseJsonBody(
            typeof body === 'string' ? Buffer.from(body) : body,
            contexts.get(request)?.viewer?.account.id ?? request.ip,
          ),
      );

      api.setNotFoundHandler((_request, reply) => sendRestError(reply, ROUTE_NOT_FOUND));

      api.setErrorHandler((error, request, reply) => {
        // DocuSeal routes first: an unknown route is a 404 even when its body would not parse.
        if (request.is404) return sendRestError(reply, ROUTE_NOT_FOUND);
        const appError = findAppError(error);
        if (appError) return sendAppError(request, reply, appError);
        const code = (error as { code?: string }).code;
        if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
          const limitMb = Math.round((options.bodyLimit / 1024 / 1024) * 10) / 10;
          return sendRestError(
            reply,
            restErrorFor(new AppError('PAYLOAD_TOO_LARGE', `Request body is too large (limit ${limitMb} MB)`)),
          );
        }
        if (code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
          return sendRestError(reply, restErrorFor(new AppError('BAD_REQUEST', (error as Error).message)));
        }
        request.log.error({ err: error }, 'unexpected error in a REST route');
        return sendRestError(reply, INTERNAL_ERROR);
      });

      // Every path also with DocuSeal's `.json` suffix (Rails' `(.:format)`: /templates.json, /templates/1.json).
      for (const entry of prepared)
        for (const url of [entry.route.path, `${entry.route.path}.json`]) {
          api.route({
            method: entry.route.method,
            url,
            // Authenticate before the body is read: a caller without a valid key learns nothing more.
            preParsing: async (request, reply, payload) => {
              const context = await options.contextFactory({
                header: (name) => headerValue(request, name),
                ip: request.ip,
                logger: request.log,
              });
              contexts.set(request, context);
              if (!entry.route.public && !context.viewer) {
                await sendRestError(reply, restErrorFor(new AppError('UNAUTHENTICATED')));
              } else {
                const refusal = checkKeyScope(entry, context);
                if (refusal) await sendRestError(reply, restErrorFor(refusal));
              }
              return payload;
            },
            handler: (request, reply) => handle(entry, request, reply, options),
            ...idempotencyRouteHooks(entry.route.method, options.idempotencyKeys, (request) => {
              const viewer = contexts.get(request)?.viewer;
              return viewer ? { accountId: viewer.account.id, apiKeyId: viewer.apiKeyId } : undefined;
            }),
          });
        }
    },
    { prefix: options.prefix ?? '/api' },
  );
}

async function handle(entry: PreparedRoute, request: FastifyRequest, reply: FastifyReply, options: RestGatewayOptions) {
  const { route } = entry;
  const context = contexts.get(request)!;

  const restRequest: RestRequest = {
    params: (request.params ?? {}) as Record<string, string>,
    query: (request.query ?? {}) as RestRequest['query'],
    body: request.body,
    context,
  };
  const variableValues = route.variables ? await route.variables(restRequest) : {};
  let data: unknown;
  if (route.run) {
    const coerced = getVariableValues(options.schema, entry.operation.variableDefinitions ?? [], variableValues);
    if (coerced.errors) return refuseVariables(request, reply, entry, coerced.errors[0]!);
    idempotentExecutionBegins(request);
    data = await route.run(coerced.coerced, restRequest);
  } else {
    const result = (await execute({
      schema: options.schema,
      document: entry.document,
      operationName: entry.operationName,
      variableValues,
      contextValue: context,
    })) as ExecutionResult;
    // Without data GraphQL refused the variables before executing: no answer is kept for an Idempotency-Key.
    if (result.data !== undefined) idempotentExecutionBegins(request);

    if (result.errors?.length) {
      const appError = result.errors.map(findAppError).find((e) => e !== undefined);
      if (appError) return sendAppError(request, reply, appError);
      const own = result.errors.find(isGraphQLOwnError);
      if (own) return refuseVariables(request, reply, entry, own);
      request.log.error(
        { err: result.errors[0]?.originalError ?? result.errors[0], operation: entry.operationName },
        'unexpected error in a REST route',
      );
      return sendRestError(reply, INTERNAL_ERROR);
    }
    data = result.data;
  }
  const body = await route.serialize(data, restRequest);
  reply.code(route.status ?? 200).header('content-type', 'application/json; charset=utf-8');
  return reply.send(body instanceof RawJson ? body.text : JSON.stringify(body));
}

/**
 * The API key scope of a route (src/accounts/key-scopes.ts), before its body is read: the scope
 * of its operation — `write` for a mutation, `read` for a query (every GET, and the tools' POSTs,
 * which change nothing) — noted on the context for requireViewer, and the refusal of a key without
 * it (403 `{"error":"Not authorized: this API key lacks the \"write\" scope"}`). A public route
 * (the signing form's, whose capability is the slug) checks no key.
 */
function checkKeyScope(entry: PreparedRoute, context: GraphQLContext): AppError | undefined {
  if (entry.route.public) return undefined;
  context.operationScope = entry.scope;
  return context.viewer ? missingScope(context.viewer, entry.scope) : undefined;
}

/**
 * Variables the request made that GraphQL refuses (e.g. "abc" for an Int): bad input, not a
 * failure of ours; routes should have said it better in variables(), so note it.
 */
function refuseVariables(request: FastifyRequest, reply: FastifyReply, entry: PreparedRoute, error: GraphQLError) {
  request.log.warn(
    { err: error, operation: entry.operationName },
    'REST request rejected by GraphQL variable coercion',
  );
  return sendRestError(reply, restErrorFor(new AppError('VALIDATION', error.message)));
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The DocuSeal response for an AppError; the cause of an outage (503) is logged, not shown. */
function sendAppError(request: FastifyRequest, reply: FastifyReply, appError: AppError) {
  if (appError.code === 'UNAVAILABLE' && appError.cause)
    request.log.warn({ err: appError.cause }, 'REST request failed: service unavailable');
  return sendRestError(reply, restErrorFor(appError));
}
