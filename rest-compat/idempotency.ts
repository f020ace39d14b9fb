/**
 * `Idempotency-Key` on the REST API (docs/idempotency.md; the rules: src/accounts/idempotency-keys.ts).
 * Route hooks of the gateway's POST, PUT and PATCH routes (./gateway.ts) and the calls the
 * multipart upload route makes (./routes/attachments.ts):
 * - before the handler (after authentication and the body's parsing), the key is claimed for the
 *   caller's account, or the request is answered: the kept answer with `Idempotent-Replayed: true`,
 *   409 `{"error": ...}` while the first request runs, 422 when the key was used with another
 *   request (or is empty or too long);
 * - the route says when execution begins (idempotentExecutionBegins: its service or operation is
 *   called); an answer sent after that is kept as it is sent (status, Content-Type, body: the onSend
 *   hook), one sent before (the route's reading of the body, GraphQL's coercion of its variables)
 *   gives the key back, as Stripe keeps no result of a request whose parameters failed validation.
 * A GET or DELETE, and a request without a valid API key (the signing form's slug routes), ignore
 * the header: GETs and DELETEs are idempotent already, and without an account a key has no scope.
 *
 * A request without the header meets one header look-up per hook; GET routes have no hook at all.
 */
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  type IdempotencyClaim,
  type IdempotencyKeys,
  isKeptStatus,
  readIdempotencyKey,
  requestFingerprint,
} from '../src/accounts/idempotency-keys.ts';

/** Methods whose requests take a key (Stripe: POST; the issue: POST and PUT; PATCH as PUT). */
const KEYED_METHODS = new Set(['POST', 'PUT', 'PATCH']);

interface KeyedRequest {
  claim: IdempotencyClaim;
  /** Set by idempotentExecutionBegins: the answer is kept. */
  began: boolean;
}

/** The requests of this process that hold a key, until their answer is sent. */
const keyedRequests = new WeakMap<FastifyRequest, KeyedRequest>();

export interface IdempotencyRouteHooks {
  preHandler?: preHandlerHookHandler;
  onSend?: onSendHookHandler;
}

/**
 * The hooks of a gateway route: none for a route that takes no POST, PUT or PATCH, or when the
 * service has no idempotency keys (a gateway built without them).
 * @param callerOf the caller's account and API key, undefined without a valid API key
 */
export function idempotencyRouteHooks(
  methods: string | readonly string[],
  keys: IdempotencyKeys | undefined,
  callerOf: (request: FastifyRequest) => { accountId: number; apiKeyId: number } | undefined,
): IdempotencyRouteHooks {
  if (!keys || ![methods].flat().some((method) => KEYED_METHODS.has(method))) return {};
  return {
    preHandler(request, reply, done) {
      const caller = request.headers[IDEMPOTENCY_KEY_HEADER] === undefined ? undefined : callerOf(request);
      if (caller === undefined) return done();
      beginIdempotentRequest(keys, request, reply, { ...caller, body: request.body }).then(
        // Answered (a replay): the handler does not run, so `done` is not called (Fastify's hooks).
        (answered) => (answered ? undefined : done()),
        done,
      );
    },
    onSend: keepIdempotentAnswer,
  };
}

/**
 * Claims the request's key for `accountId` and the caller's `apiKeyId`, or answers the request with the kept answer.
 * Does nothing for a method other than POST, PUT or PATCH, or without the header.
 * @param options.body what makes the request the same request besides its method and path: the
 *   parsed JSON body (the gateway), or the form's fields and the file's digest (the upload route)
 * @returns true when the request was answered (a replay): the route must not run
 * @throws AppError VALIDATION (422) for an empty or too long key, IDEMPOTENCY_KEY_REUSED (422),
 *   IDEMPOTENCY_KEY_IN_USE (409)
 */
export async function beginIdempotentRequest(
  keys: IdempotencyKeys,
  request: FastifyRequest,
  reply: FastifyReply,
  options: { accountId: number; apiKeyId: number; body: unknown },
): Promise<boolean> {
  if (!KEYED_METHODS.has(request.method)) return false;
  const header = request.headers[IDEMPOTENCY_KEY_HEADER];
  const key = readIdempotencyKey(Array.isArray(header) ? header.join(', ') : header);
  if (key === undefined) return false;
  const fingerprint = requestFingerprint(['rest', request.method, canonicalPath(request.url), options.body ?? null]);
  const start = await keys.begin({ accountId: options.accountId, apiKeyId: options.apiKeyId, key, fingerprint });
  if (start.run) {
    keyedRequests.set(request, { claim: start.run, began: false });
    return false;
  }
  const { replay } = start;
  reply.code(replay.status).header(IDEMPOTENT_REPLAYED_HEADER, 'true');
  if (replay.contentType) reply.header('content-type', replay.contentType);
  reply.send(replay.body);
  return true;
}

/**
 * The route is about to run its service or operation: from now on its answer, whatever it is, is
 * kept for the request's key (when it holds one).
 */
export function idempotentExecutionBegins(request: FastifyRequest): void {
  const keyed = keyedRequests.get(request);
  if (keyed) keyed.began = true;
}

/**
 * onSend hook: keeps the answer of a request that holds a key and began executing (unless it asks
 * for a retry: 429, 503), else gives the key back; then the answer goes out, unchanged. Awaited
 * before sending, so that a client that has the answer finds it kept.
 */
export const keepIdempotentAnswer: onSendHookHandler = (request, reply, payload, done) => {
  const keyed = keyedRequests.get(request);
  if (!keyed) return done(null, payload);
  keyedRequests.delete(request);
  // Routes send JSON text or its bytes (RawJson); nothing at all is an empty body; a stream is not kept.
  const body =
    typeof payload === 'string'
      ? payload
      : Buffer.isBuffer(payload)
        ? payload.toString('utf8')
        : payload === null || payload === undefined
          ? ''
          : undefined;
  const contentType = reply.getHeader('content-type');
  const settled =
    keyed.began && body !== undefined && isKeptStatus(reply.statusCode)
      ? keyed.claim.finish({
          status: reply.statusCode,
          contentType: typeof contentType === 'string' ? contentType : null,
          body,
        })
      : keyed.claim.release();
  // finish and release log their own failures and never reject.
  settled.then(() => done(null, payload));
};

/** The path and query as sent, without DocuSeal's `.json` suffix (`/api/submissions.json` is `/api/submissions`). */
function canonicalPath(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return (path.endsWith('.json') ? path.slice(0, -'.json'.length) : path) + (query === -1 ? '' : url.slice(query));
}
