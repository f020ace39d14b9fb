/**
 * Database outages, told apart from every other failure in this one place (issue 12 §2,
 * docs/security.md "Database outages"): a request that fails because PostgreSQL is down,
 * restarting or unreachable is answered 503 with `Retry-After` (AppError UNAVAILABLE), not 500.
 * The REST gateway, GraphQL's error masking and Fastify's error handler all ask
 * findAppError (src/graphql/errors.ts), which asks isDatabaseUnavailable.
 *
 * No library classifies these: the errors come from three layers, each recognised by its own
 * marks —
 * - Prisma (7, driver adapters): its connection error codes (P1001 can't reach, P1002/P1008
 *   timeouts, P1017 server closed the connection, P2024 pool timeout, P2028 "Unable to start a
 *   transaction in the given time"), or the `meta.driverAdapterError.cause` that
 *   `@prisma/adapter-pg` made from pg's error (kinds DatabaseNotReachable, ConnectionClosed,
 *   SocketTimeout, TooManyConnections, or a PostgreSQL SQLSTATE);
 * - PostgreSQL itself, through pg: SQLSTATE class 08 (connection exception), 57P01–57P03
 *   (terminated by the administrator, crash shutdown, cannot connect now: starting or stopping),
 *   53300 (too many connections);
 * - pg's own connection errors, which have no code, only their message ("Connection terminated
 *   unexpectedly", "timeout exceeded when trying to connect", ...), and the socket errors of its
 *   connection attempts (ECONNREFUSED, ECONNRESET, ETIMEDOUT, EHOSTUNREACH, ENOTFOUND ...).
 *
 * A socket error counts only as the error itself or as what GraphQL wrapped (`originalError`),
 * not as the `cause` of another error: `fetch()` of a user's URL fails with a TypeError whose
 * cause is an ECONNREFUSED too, and that is not an outage of ours. A bare socket error from
 * another service a request waits on (Redis) is taken for one too, and a 503 suits it as well.
 */
import { AppError } from '../errors.ts';

/**
 * Seconds a client is asked to wait before retrying (`Retry-After`, RFC 9110 §10.2.3) when the
 * database is unavailable: about what a PostgreSQL restart or fail-over takes.
 */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** What clients read: nothing about the database, its host or the error. */
export const DATABASE_UNAVAILABLE_MESSAGE = 'Service unavailable, please try again later';

const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** SQLSTATEs of an unavailable server (PostgreSQL Appendix A). */
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;
/** pg's connection errors, which carry no code (pg/lib/client.js, pg-pool/index.js). */
const PG_CONNECTION_MESSAGES = new RegExp(
  '^(Connection terminated( unexpectedly| due to connection timeout)?|timeout exceeded when trying to connect' +
    '|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)$',
);
/** Prisma's P2028 is any interactive-transaction failure; only this one is a pool that cannot connect. */
const PRISMA_TRANSACTION_START_TIMEOUT = /Unable to start a transaction in the given time/;

/**
 * Whether `error` (or what it wraps) says the database is unreachable or not accepting work:
 * refused, reset or timed-out connections, a server shutting down or starting, a full
 * connection pool. Other database errors (constraint violations, bad SQL, a missing table) and
 * every non-database error answer false.
 * @param error anything thrown: a Prisma error, a pg error, a GraphQLError around one, ...
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  let reachedThroughCause = false;
  for (let depth = 0; current && typeof current === 'object' && depth < 6; depth += 1) {
    if (isUnavailableNode(current as ErrorLike, !reachedThroughCause)) return true;
    const next = current as ErrorLike;
    if (next.originalError) {
      current = next.originalError;
    } else {
      current = next.cause;
      reachedThroughCause = true;
    }
  }
  return false;
}

/**
 * The AppError a database outage is answered with: UNAVAILABLE (503), a message that names
 * nothing, and `details.retryAfterSeconds`, which the REST layer, GraphQL and Fastify's error
 * handler turn into `Retry-After`. The outage itself is kept as the cause, for the log.
 */
export function databaseUnavailableError(cause: unknown): AppError {
  return new AppError('UNAVAILABLE', DATABASE_UNAVAILABLE_MESSAGE, {
    cause,
    details: { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
  });
}

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  name?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; code?: unknown; originalCode?: unknown } } };
  errors?: unknown;
  originalError?: unknown;
  cause?: unknown;
}

function isUnavailableNode(error: ErrorLike, socketErrorsCount: boolean): boolean {
  const code = typeof error.code === 'string' ? error.code : undefined;
  const message = typeof error.message === 'string' ? error.message : '';
  if (code && /^P\d{4}$/.test(code)) {
    if (PRISMA_CODES.has(code)) return true;
    if (code === 'P2028') return PRISMA_TRANSACTION_START_TIMEOUT.test(message);
    const adapter = error.meta?.driverAdapterError?.cause;
    if (!adapter) return false;
    if (typeof adapter.kind === 'string' && ADAPTER_KINDS.has(adapter.kind)) return true;
    const sqlstate = adapter.originalCode ?? adapter.code;
    return typeof sqlstate === 'string' && UNAVAILABLE_SQLSTATE.test(sqlstate);
  }
  if (code && UNAVAILABLE_SQLSTATE.test(code)) return true;
  if (socketErrorsCount && code && SOCKET_CODES.has(code)) return true;
  if (PG_CONNECTION_MESSAGES.test(message)) return true;
  // Node's AggregateError from a connection tried on several addresses (IPv4 and IPv6).
  if (socketErrorsCount && Array.isArray(error.errors) && error.errors.length > 0) {
    return error.errors.every(
      (inner) => inner && typeof inner === 'object' && isUnavailableNode(inner as ErrorLike, true),
    );
  }
  return false;
}

/** How often a message repeated during an outage is logged (see logOutageOnce). */
export const OUTAGE_LOG_INTERVAL_MS = 30_000;
/** A message not repeated for this long belongs to a new outage, logged at once. */
const OUTAGE_QUIET_GAP_MS = 5000;

/**
 * Logs `message` for `error`, but during a database outage only its first time and then at most
 * once every `intervalMs` (with `repeated`: how many were left out since), for the work that
 * retries every second or faster while the database is away — the job scans, the LISTEN
 * reconnects, the outbox relay — and would otherwise write dozens of lines a second. The first
 * error after 5 s without one starts a new outage, logged at once. Any other error is logged
 * every time.
 * @param log e.g. `(object, message) => logger.warn(object, message)`
 */
export function logOutageOnce(
  log: (object: Record<string, unknown>, message: string) => void,
  intervalMs = OUTAGE_LOG_INTERVAL_MS,
): (error: unknown, message: string, context?: Record<string, unknown>) => void {
  const outages = new Map<string, { loggedAt: number; lastAt: number; repeated: number }>();
  return (error, message, context = {}) => {
    if (!isDatabaseUnavailable(error)) {
      log({ ...context, err: error }, message);
      return;
    }
    const now = Date.now();
    const outage = outages.get(message);
    if (outage && now - outage.lastAt < OUTAGE_QUIET_GAP_MS && now - outage.loggedAt < intervalMs) {
      outage.lastAt = now;
      outage.repeated += 1;
      return;
    }
    const repeated = outage && now - outage.lastAt < OUTAGE_QUIET_GAP_MS ? { repeated: outage.repeated } : {};
    outages.set(message, { loggedAt: now, lastAt: now, repeated: 0 });
    log({ ...context, err: error, databaseUnavailable: true, ...repeated }, message);
  };
}
