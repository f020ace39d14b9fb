/**
 * DocuSeal's error statuses and bodies (reference/docuseal-behaviour.md §2–3, DESIGN.md "errors"),
 * the one mapping of AppError codes to HTTP: the REST API (rest-compat's errors.ts re-exports it)
 * and the service's own routes (src/http/errors.ts: the signing page, files) answer with it.
 * Controller-style errors are `{"error": message}`; errors DocuSeal lets escape to its exception
 * app are `{"status": code}`.
 */
import type { FastifyReply } from 'fastify';
import type { AppError, ErrorCode } from '../errors.ts';
import { retryAfterSecondsOf } from '../graphql/errors.ts';

export interface RestErrorResponse {
  status: number;
  body: Record<string, unknown>;
  /** Extra response headers (`Retry-After` on a database outage). */
  headers?: Record<string, string>;
}

const BODIES: Record<ErrorCode, (error: AppError) => RestErrorResponse> = {
  UNAUTHENTICATED: () => ({ status: 401, body: { error: 'Not authenticated' } }),
  FORBIDDEN: (e) => ({ status: 403, body: { error: e.message } }),
  // DESIGN.md "errors": `{"error": ...}` with DocuSeal's status (DocuSeal itself answers an
  // unknown id with `{"status":404}`; docs/compatibility.md records the difference).
  NOT_FOUND: (e) => ({ status: 404, body: { error: e.message } }),
  BAD_REQUEST: (e) => ({ status: 400, body: { status: 400, error: e.message } }),
  PAYLOAD_TOO_LARGE: (e) => ({ status: 413, body: { error: e.message } }),
  VALIDATION: (e) => ({ status: 422, body: { error: e.message } }),
  IDEMPOTENCY_KEY_REUSED: (e) => ({ status: 422, body: { error: e.message } }),
  IDEMPOTENCY_KEY_IN_USE: (e) => ({ status: 409, body: { error: e.message } }),
  RATE_LIMITED: () => ({ status: 429, body: { error: 'Too many requests' } }),
  UNAVAILABLE: (e) => ({ status: 503, body: { error: e.message } }),
};

/**
 * The DocuSeal response for an expected error; with `Retry-After` when the error gives a retry
 * delay (a database outage: 503 `{"error":"Service unavailable, please try again later"}`).
 */
export function restErrorFor(error: AppError): RestErrorResponse {
  const response = BODIES[error.code](error);
  const retryAfter = retryAfterSecondsOf(error);
  return retryAfter === undefined ? response : { ...response, headers: { 'retry-after': String(retryAfter) } };
}

/** Sends an error response as JSON (`application/json; charset=utf-8`), with its headers. */
export function sendRestError(reply: FastifyReply, response: RestErrorResponse): FastifyReply {
  if (response.headers) reply.headers(response.headers);
  return reply
    .code(response.status)
    .header('content-type', 'application/json; charset=utf-8')
    .send(JSON.stringify(response.body));
}

/** Unexpected failures: the cause is logged, never shown. */
export const INTERNAL_ERROR: RestErrorResponse = { status: 500, body: { status: 500 } };
/** Unknown route or method. */
export const ROUTE_NOT_FOUND: RestErrorResponse = { status: 404, body: { status: 404 } };
