/**
 * The HTTP status of a GraphQL answer over HTTP, per the GraphQL-over-HTTP specification
 * (https://graphql.github.io/graphql-over-http/draft/, "Response" and its status code tables),
 * which sets it by the media type the client accepts (issue 23 §8):
 *
 * - `application/graphql-response+json`: an answer without `data` (the request was refused before
 *   execution began) carries the status of its error, 4xx for the caller's mistake: an AppError's
 *   own (src/errors.ts ERROR_CODES: 409 IDEMPOTENCY_KEY_IN_USE, 422 IDEMPOTENCY_KEY_REUSED and
 *   VALIDATION, as REST answers them); an answer with `data` (`null` included: execution began)
 *   is 200;
 * - `application/json` (and a request with no `Accept`, which Yoga answers as such): 200 for every
 *   well-formed request, its errors in the body ("the server SHOULD use the 200 status code");
 * - a request that is not well-formed GraphQL-over-HTTP (a body that is not JSON, `variables`
 *   that are not a JSON object, a body over MAX_BODY_SIZE_MB, a content type that is not JSON):
 *   4xx with either media type, with a GraphQL error body (`{"errors": [{"message", "extensions":
 *   {"code"}}]}`) rather than Fastify's or none.
 *
 * Statuses set by their own rule are left alone: the limits' 400 (src/graphql/limits.ts), a
 * database outage's 503 with `Retry-After` (src/graphql/errors.ts), Yoga's 400 and 405 for
 * malformed requests. The mechanism is Yoga's `extensions.http` (`status`, and `spec: true` for a
 * status the spec reserves to application/graphql-response+json), which Yoga takes out of the body.
 *
 * Before: a refused Idempotency-Key answered 500 with either media type (an error wrapping an
 * AppError and no `data` is "unexpected" to Yoga), which clients and proxies retry.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type ExecutionResult, GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import { withExtensions } from './errors.ts';

/** The response media type the spec defines, preferred over application/json when accepted. */
export const GRAPHQL_RESPONSE_MEDIA_TYPE = 'application/graphql-response+json';

/** The Yoga plugin (src/graphql/server.ts registers it). */
export function useHttpStatuses(): Plugin {
  return {
    onRequestParse({ request }) {
      if (request.method === 'GET') checkGetParameters(request.url);
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || isAsyncIterable(result)) return;
      const single = result as ExecutionResult;
      // With `data`, execution began: 200 whatever the media type (field errors are part of the answer).
      if ('data' in single || !single.errors?.length) return;
      if (!single.errors.some((error) => statusOf(error) !== undefined)) return;
      setResult({ ...single, errors: single.errors.map(withStatus) });
    },
  };
}

/** An error's status under application/graphql-response+json, when it has a code of ours and no status yet. */
function statusOf(error: GraphQLError): number | undefined {
  if (error.extensions?.http) return undefined;
  const code = error.extensions?.code;
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) ? ERROR_CODES[code as ErrorCode] : undefined;
}

/** A copy of `error` carrying its status for application/graphql-response+json only (`spec`). */
function withStatus(error: GraphQLError): GraphQLError {
  const status = statusOf(error);
  if (status === undefined) return error;
  return withExtensions(error, { ...error.extensions, http: { status, spec: true } });
}

/**
 * GET /graphql's `variables` and `extensions` must be JSON objects when given: Yoga parses them
 * with JSON.parse and, on a syntax error, answered "Unexpected error." (INTERNAL_SERVER_ERROR,
 * logged as a fault of ours).
 * @throws GraphQLError BAD_REQUEST, HTTP 400 with either media type (a request that is not well-formed)
 */
function checkGetParameters(url: string): void {
  const query = url.indexOf('?');
  if (query < 0) return;
  const parameters = new URLSearchParams(url.slice(query + 1));
  for (const name of ['variables', 'extensions']) {
    const value = parameters.get(name);
    if (!value) continue;
    try {
      JSON.parse(value);
    } catch {
      throw new GraphQLError(`The "${name}" parameter is not valid JSON.`, {
        extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
      });
    }
  }
}

/**
 * Answers a request to /graphql that Fastify refused before GraphQL saw it (a body that is not
 * valid JSON, over MAX_BODY_SIZE_MB, of a content type it does not parse), or that Yoga answered
 * with a status and no body (415 a content type it does not read, 406 a subscription without
 * `Accept: text/event-stream`), as GraphQL answers errors: `{"errors": [{"message", "extensions":
 * {"code"}}]}`, with the same status, in the media type the client accepts.
 * @param code BAD_REQUEST or PAYLOAD_TOO_LARGE (src/errors.ts)
 */
export function sendGraphQLRequestError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: { status: number; message: string; code: ErrorCode },
): FastifyReply {
  const accept = request.headers.accept ?? '';
  const mediaType = accept.includes(GRAPHQL_RESPONSE_MEDIA_TYPE) ? GRAPHQL_RESPONSE_MEDIA_TYPE : 'application/json';
  return reply
    .code(error.status)
    .type(`${mediaType}; charset=utf-8`)
    .send(JSON.stringify({ errors: [{ message: error.message, extensions: { code: error.code } }] }));
}
