/**
 * One PostgreSQL channel listened to on a connection of its own (LISTEN/NOTIFY), kept up for the
 * life of the process: the way instances sharing a database hear of a change another one (or
 * the CLI, or an operator's SQL) committed, with no other server (issue 23 §7: credential
 * revocations, src/accounts/credential-sessions.ts).
 *
 * - A dedicated `pg.Client`, not a connection of the service's pool: a LISTEN belongs to its
 *   session, and a pooled connection is lent to other work and closed when idle. One per channel
 *   and instance.
 * - A lost connection (the server restarted, a fail-over, `pg_terminate_backend`, a network cut)
 *   is replaced with exponential backoff: 100 ms doubling to 5 s, with jitter so that instances do
 *   not all come back in step. Notifications sent while no connection listened are lost
 *   (PostgreSQL keeps none for a session that is not there): `onListening` runs after each LISTEN
 *   took effect, the first and every later one, so the owner can catch up from the tables.
 * - A connection that died without a word (a firewall or NAT that drops idle connections, a
 *   half-open TCP socket) would never report it: every HEARTBEAT_MS a `SELECT 1` must answer
 *   within HEARTBEAT_TIMEOUT_MS, else the connection is replaced as lost. TCP keep-alive is on too.
 *
 * Needs a session connection: behind PgBouncer in transaction mode a LISTEN does not stay with
 * its client (docs/operations.md); point DATABASE_URL at PostgreSQL or a session-mode pooler.
 *
 * Hand-rolled rather than `pg-listen` (not a dependency): the few rules above, on the `pg` client
 * the service already uses. Failures during an outage are logged through logOutageOnce, so a
 * long outage does not write a line per attempt.
 */
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import { logOutageOnce } from './unavailable.ts';

/** The first retry after a lost or refused connection, in ms (then doubled up to RECONNECT_MAX_MS). */
export const RECONNECT_INITIAL_MS = 100;
/** The longest wait between two connection attempts, in ms. */
export const RECONNECT_MAX_MS = 5000;
/** How often the listening connection is checked with `SELECT 1`, in ms. */
export const HEARTBEAT_MS = 30_000;
/** How long that `SELECT 1` (and a connection attempt) may take before the connection counts as lost, in ms. */
export const HEARTBEAT_TIMEOUT_MS = 5000;

export interface ChannelListener {
  /**
   * Connects and LISTENs; resolves after the first attempt, successful or not (a failed one is
   * retried in the background, as after a loss). Called once.
   */
  start(): Promise<void>;
  /** Stops listening and reconnecting; ends the connection. */
  close(): Promise<void>;
}

/**
 * Listens to one channel of the database at `connectionString`.
 * @param options.channel the channel's name (an identifier; quoted as one)
 * @param options.applicationName the connection's `application_name`, as pg_stat_activity shows it
 * @param options.onNotification each notification's payload (text), in the order PostgreSQL sent them
 * @param options.onListening after each LISTEN took effect (first start and every reconnection):
 *   whatever was notified before it may have been missed
 */
export function listenToChannel(options: {
  connectionString: string;
  channel: string;
  applicationName: string;
  logger: FastifyBaseLogger;
  onNotification: (payload: string) => void;
  onListening: () => void;
}): ChannelListener {
  const { logger, channel } = options;
  const logFailure = logOutageOnce((object, message) => logger.warn({ ...object, channel }, message));
  let client: pg.Client | undefined;
  let closed = false;
  let attempts = 0;
  let wasLost = false;
  let retry: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    retry = undefined;
    if (closed) return;
    const candidate = new pg.Client({
      connectionString: options.connectionString,
      application_name: options.applicationName,
      connectionTimeoutMillis: HEARTBEAT_TIMEOUT_MS,
      // For the heartbeat's SELECT 1 (and the LISTEN): an answer this late counts as none.
      query_timeout: HEARTBEAT_TIMEOUT_MS,
      keepAlive: true,
    });
    candidate.on('notification', (message) => {
      if (message.channel !== channel || message.payload === undefined) return;
      try {
        options.onNotification(message.payload);
      } catch (error) {
        logger.error({ err: error, channel }, 'a notification could not be handled');
      }
    });
    // Errors while connecting reject connect() below; later ones, and the end, mean a lost connection.
    candidate.on('error', (error) => lose(candidate, error));
    candidate.on('end', () => lose(candidate, new Error('Connection terminated unexpectedly')));
    try {
      await candidate.connect();
      await candidate.query(`LISTEN ${candidate.escapeIdentifier(channel)}`);
    } catch (error) {
      void candidate.end().catch(() => undefined);
      if (closed) return;
      logFailure(error, 'LISTEN connection could not be opened; retrying');
      wasLost = true;
      scheduleConnect();
      return;
    }
    if (closed) {
      await candidate.end().catch(() => undefined);
      return;
    }
    client = candidate;
    attempts = 0;
    if (wasLost) logger.info({ channel }, 'LISTEN connection open again');
    wasLost = false;
    options.onListening();
  }

  /** The listening connection `lost` is gone: it is ended and replaced (once per connection). */
  function lose(lost: pg.Client, error: unknown): void {
    if (client !== lost) return;
    client = undefined;
    void lost.end().catch(() => undefined);
    if (closed) return;
    logFailure(error, 'LISTEN connection lost; reconnecting');
    wasLost = true;
    scheduleConnect();
  }

  function scheduleConnect(): void {
    const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_INITIAL_MS * 2 ** attempts);
    attempts += 1;
    // Between half and all of the ceiling: instances that lost the server together spread out.
    retry = setTimeout(() => void connect(), ceiling / 2 + Math.random() * (ceiling / 2));
  }

  const heartbeat = setInterval(() => {
    const current = client;
    if (!current) return;
    current.query('SELECT 1').catch((error: unknown) => lose(current, error));
  }, HEARTBEAT_MS);
  heartbeat.unref();

  return {
    start: () => connect(),
    async close() {
      closed = true;
      clearInterval(heartbeat);
      if (retry) clearTimeout(retry);
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}
