/**
 * Request ids: each HTTP request gets one, written on every log line of the request (Fastify's
 * `reqId`, through request.log and the GraphQL context's logger) and returned in the
 * `X-Request-Id` response header, so that a client's report can be matched with the logs. An
 * incoming `X-Request-Id` (set by a load balancer or the client) is kept when it is well-formed and
 * bounded, so one id follows the request through the proxies in front of Signet; otherwise a new
 * random UUID is made.
 */
import { randomUUID } from 'node:crypto';

/** The request and response header. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** Longest incoming id kept, in characters. */
export const MAX_REQUEST_ID_LENGTH = 128;

/** What an incoming id may hold: letters, digits and `-._:` (UUIDs, ULIDs, proxies' hex or `host:n` ids); no spaces. */
const REQUEST_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${MAX_REQUEST_ID_LENGTH}}$`);

/**
 * The id of a request: its `X-Request-Id` header when that is one value of at most
 * MAX_REQUEST_ID_LENGTH characters from `A-Za-z0-9._:-`, else a new UUID v4.
 */
export function requestIdFor(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}
