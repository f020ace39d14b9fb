/**
 * Sessions opened with a credential, ended when it is revoked (issue 12 §4): every open GraphQL
 * WebSocket (graphql-ws) and SSE subscription stream is tracked with the API key, user and
 * account it authenticated with, and ended when any of them stops authenticating:
 *
 * - at once, when a revocation is announced (LiveEvents.publishRevocation: in process, or
 *   through Redis to every instance when REDIS_URL is set; revokeApiKey announces it);
 * - otherwise at the next periodic check (every CREDENTIALS_RECHECK_SECONDS, one query per
 *   instance for all its open sessions, only while some are open): a key revoked, a user or
 *   account archived outside this service (the CLI without Redis, SQL) ends its sessions too.
 *
 * HTTP requests need none of this: each one authenticates anew (src/accounts/authenticate.ts
 * keeps no cache of key look-ups), so a revoked key gets 401 on its next request on any instance.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/client.ts';
import type { CredentialRevocation, LiveEvents } from '../events/pubsub.ts';
import type { Viewer } from './authenticate.ts';

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
  /** Stops listening and checking (shutdown); open sessions are left to the server's own close. */
  close(): void;
}

interface Session {
  credential: SessionCredential;
  end: () => void;
}

/**
 * @param options.recheckMs milliseconds between checks of the open sessions' credentials
 *   (config.credentialsRecheck)
 */
export function createCredentialSessions(options: {
  db: Db;
  live: Pick<LiveEvents, 'onRevocation'>;
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

  const revoked = (revocation: CredentialRevocation) => {
    const keys = new Set(revocation.apiKeyIds);
    const users = new Set(revocation.userIds);
    const accounts = new Set(revocation.accountIds);
    endWhere((c) => keys.has(c.apiKeyId) || users.has(c.userId) || accounts.has(c.accountId), 'revoked');
  };
  const stopListening = options.live.onRevocation(revoked);

  let checking = false;
  /** One query for every key behind an open session: those no longer valid end. */
  async function check(): Promise<void> {
    if (checking || sessions.size === 0) return;
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
      endWhere((c) => keyIds.has(c.apiKeyId) && !stillValid.has(c.apiKeyId), 'no longer valid at the periodic check');
    } catch (error) {
      logger.warn({ err: error }, 'could not check the credentials of open sessions; trying again at the next check');
    } finally {
      checking = false;
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
      return () => {
        sessions.delete(session);
      };
    },
    close() {
      clearInterval(timer);
      stopListening();
    },
  };
}
