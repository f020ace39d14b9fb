/**
 * `GET /health`: 200 `{"status":"ok"}` when the database answers `SELECT 1` within 2 s;
 * otherwise 503 `{"status":"unavailable"}` with `Retry-After` (docs/security.md "Database
 * outages"). The body names nothing (no database, host, port or error text: /health is public
 * and load balancers log it); the cause goes to the log.
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/client.ts';
import { pingDatabase } from '../db/queries/health.ts';
import { DATABASE_RETRY_AFTER_SECONDS } from '../db/unavailable.ts';

/** How long the database may take to answer `SELECT 1`, in milliseconds. */
const DATABASE_CHECK_TIMEOUT_MS = 2000;

/** Registers `GET /health` (and HEAD) on the app. */
export function registerHealthRoute(app: FastifyInstance, db: Db): void {
  app.get('/health', async (request, reply) => {
    try {
      await withTimeout(pingDatabase(db), DATABASE_CHECK_TIMEOUT_MS);
      return reply.code(200).send({ status: 'ok' });
    } catch (error) {
      request.log.warn({ err: error }, 'health check: the database did not answer');
      return reply
        .code(503)
        .header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
        .send({ status: 'unavailable' });
    }
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
