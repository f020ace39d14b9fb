/**
 * Sessions opened with a credential, ended when it is revoked (issue 12 §4, issue 23 §7): every
 * open GraphQL WebSocket (graphql-ws) and SSE subscription stream is tracked with the API key,
 * user and account it authenticated with, and ended when any of them stops authenticating:
 *
 * - within a second, on every instance, when PostgreSQL announces it: the database itself sends a
 *   NOTIFY on CREDENTIAL_REVOCATIONS_CHANNEL from the transaction that revokes a key, archives a
 *   user or an account, or deletes a key, whatever made the change (the API, the CLI, SQL;
 *   triggers of prisma/migrations/20261128110000_credential_revocation_notify), and each instance
 *   LISTENs on a connection of its own (src/db/listener.ts). No Redis is needed, nor used: this
 *   one path serves deployments with and without it;
 * - after that connection was lost and is back (notifications sent meanwhile are lost): at once,
 *   by a check of every open session;
 * - otherwise at the next periodic check (every CREDENTIALS_RECHECK_SECONDS, one query per
 *   instance for all its open sessions, only while some are open), the safety net for whatever
 *   the two above missed.
 *
 * HTTP requests need none of this: each one authenticates anew (src/accounts/authenticate.ts
 * keeps no cache of key look-ups), so a revoked key gets 401 on its next request on any instance.
 */
import type { FastifyBaseLogger } from 'fastify';
import { connectionStringOf, type Db } from '../db/client.ts';
import { listenToChannel } from '../db/listener.ts';
import type { Viewer } from './authenticate.ts';

/**
 * The PostgreSQL channel of credential revocations (NOTIFY'd by the triggers of
 * prisma/migrations/20261128110000_credential_revocation_notify). A channel is per database, so
 * deployments (or test databases) sharing a server do not hear each other.
 */
export const CREDENTIAL_REVOCATIONS_CHANNEL = 'signet_credential_revocations';

/** The `application_name` of each instance's listening connection (as pg_stat_activity shows it). */
export const REVOCATIONS_LISTENER_NAME = 'signet credential revocations';

/**
 * Credentials that no longer authenticate: sessions (WebSockets, SSE streams) opened with any of
 * them end. Ids only.
 */
export interface CredentialRevocation {
  apiKeyIds: number[];
  userIds: number[];
  accountIds: number[];
}

/**
 * A notification's payload, `{"apiKeyIds":[1]}`, `{"userIds":[2]}` or `{"accountIds":[3]}` (the
 * triggers name one credential each); integer ids only, anything else dropped.
 * @returns undefined for a payload that is not such JSON
 */
export function parseRevocation(payload: string): CredentialRevocation | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== 'object') return undefined;
  const detail = parsed as Record<string, unknown>;
  return { apiKeyIds: ids(detail.apiKeyIds), userIds: ids(detail.userIds), accountIds: ids(detail.accountIds) };
}

/** The integers of a list (anything else dropped). */
function ids(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((v): v is number => Number.isSafeInteger(v)) : [];
}

/** What a session authenticated with. */
export interface SessionCredential {
  apiKeyId: number;
  userId: number;
  accountId: number;
}

export interface CredentialSessions {
  /**
   * Tracks an open session until the returned function is called (when it closes by itself).
   * `end` is called at most once, when the credential is revoked; it must close the session.
   */
  track(viewer: Viewer, end: () => void): () => void;
  /**
   * Starts listening for revocations (resolves once the first LISTEN took effect or failed; a
   * failure is retried in the background, and the periodic check goes on meanwhile).
   */
  start(): Promise<void>;
  /** Stops listening and checking (shutdown); open sessions are left to the server's own close. */
  close(): Promise<void>;
}

/** How long a revocation is remembered for sessions tracked after it (ms); far above an operation's start. */
const RECENT_REVOCATIONS_MS = 60_000;

interface Session {
  credential: SessionCredential;
  end: () => void;
}

/**
 * @param options.db the service's database; the listening connection opens to the same URL
 * @param options.recheckMs milliseconds between checks of the open sessions' credentials
 *   (config.credentialsRecheck)
 */
export function createCredentialSessions(options: {
  db: Db;
  logger: FastifyBaseLogger;
  recheckMs: number;
}): CredentialSessions {
  const { db, logger } = options;
  const sessions = new Set<Session>();

  function endWhere(match: (credential: SessionCredential) => boolean, reason: string): void {
    for (const session of [...sessions]) {
      if (!match(session.credential)) continue;
      sessions.delete(session);
      logger.info(
        { apiKeyId: session.credential.apiKeyId, reason },
        'session ended: its credential no longer authenticates',
      );
      try {
        session.end();
      } catch (error) {
        logger.warn({ err: error }, 'ending a revoked session failed');
      }
    }
  }

  /**
   * Credentials revoked in the last RECENT_REVOCATIONS_MS, with when the notification came: a
   * session that authenticated just before the revocation committed but is tracked only after its
   * notification was handled (an SSE stream is tracked once its execution started) is checked as
   * it is tracked, instead of at the next periodic check.
   */
  const recent = new Map<string, number>();
  const isRecent = (c: SessionCredential) =>
    recent.has(`key:${c.apiKeyId}`) || recent.has(`user:${c.userId}`) || recent.has(`account:${c.accountId}`);
  const revoked = (revocation: CredentialRevocation) => {
    const now = Date.now();
    for (const [id, at] of recent) if (now - at > RECENT_REVOCATIONS_MS) recent.delete(id);
    for (const id of revocation.apiKeyIds) recent.set(`key:${id}`, now);
    for (const id of revocation.userIds) recent.set(`user:${id}`, now);
    for (const id of revocation.accountIds) recent.set(`account:${id}`, now);
    const keys = new Set(revocation.apiKeyIds);
    const users = new Set(revocation.userIds);
    const accounts = new Set(revocation.accountIds);
    endWhere((c) => keys.has(c.apiKeyId) || users.has(c.userId) || accounts.has(c.accountId), 'revoked');
  };
  const listener = listenToChannel({
    connectionString: connectionStringOf(db),
    channel: CREDENTIAL_REVOCATIONS_CHANNEL,
    applicationName: REVOCATIONS_LISTENER_NAME,
    logger,
    onNotification: (payload) => {
      const revocation = parseRevocation(payload);
      if (revocation) revoked(revocation);
      else logger.warn({ payload: payload.slice(0, 200) }, 'credential revocation: unreadable notification ignored');
    },
    // Whatever was revoked while nothing listened is found in the tables.
    onListening: () => void check(),
  });

  let checking = false;
  /** A check was asked for while one ran: it runs again once that one is done (its query may predate the ask). */
  let checkAgain = false;
  /** One query for every key behind an open session: those no longer valid end. */
  async function check(): Promise<void> {
    if (checking) {
      checkAgain = true;
      return;
    }
    if (sessions.size === 0) return;
    checking = true;
    try {
      const keyIds = new Set([...sessions].map((s) => s.credential.apiKeyId));
      // The same conditions as authenticate(): key not revoked, user and account not archived.
      const valid = await db.apiKey.findMany({
        where: { id: { in: [...keyIds] }, revokedAt: null, user: { archivedAt: null }, account: { archivedAt: null } },
        select: { id: true },
      });
      const stillValid = new Set(valid.map((k) => k.id));
      // Only the keys checked: a session opened meanwhile waits for the next check.
      endWhere((c) => keyIds.has(c.apiKeyId) && !stillValid.has(c.apiKeyId), 'no longer valid at a check');
    } catch (error) {
      logger.warn({ err: error }, 'could not check the credentials of open sessions; trying again at the next check');
    } finally {
      checking = false;
    }
    if (checkAgain) {
      checkAgain = false;
      await check();
    }
  }
  const timer = setInterval(() => void check(), options.recheckMs);
  timer.unref();

  return {
    track(viewer, end) {
      const session: Session = {
        credential: { apiKeyId: viewer.apiKeyId, userId: viewer.user.id, accountId: viewer.account.id },
        end,
      };
      sessions.add(session);
      // Checked against the tables (the credential may have been restored since), after track()
      // has returned to its caller.
      if (recent.size > 0 && isRecent(session.credential)) setImmediate(() => void check());
      return () => {
        sessions.delete(session);
      };
    },
    start: () => listener.start(),
    async close() {
      clearInterval(timer);
      await listener.close();
    },
  };
}
