/**
 * `GET /health`: 200 `{"status":"ok"}` when the database answers, 503 `{"status":"unavailable","reason":...}` when not.
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/client.ts';

/** How long the database may take to answer `SELECT 1`, in milliseconds. */
const DATABASE_CHECK_TIMEOUT_MS = 2000;

export function registerHealthRoute(app: FastifyInstance, db: Db): void {
  app.get('/health', async (request, reply) => {
    try {
      await withTimeout(db.$queryRaw`SELECT 1`, DATABASE_CHECK_TIMEOUT_MS);
      return reply.code(200).send({ status: 'ok' });
    } catch (error) {
      request.log.warn({ err: error }, 'health check: database unavailable');
      const detail = error instanceof Error ? error.message.split('\n').filter(Boolean).at(-1) : String(error);
      return reply.code(503).send({ status: 'unavailable', reason: `database unavailable: ${detail}` });
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
