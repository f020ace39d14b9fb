/**
 * `GET /health`: 200 `{"status":"ok"}` when the database answers `SELECT 1` within 2 s;
 * otherwise 503 `{"status":"unavailable"}` with `Retry-After` (docs/security.md "Database
 * outages"). The body names nothing (no database, host, port or error text: /health is public
 * and load balancers log it); the cause goes to the log.
 *
 * `GET /up`: DocuSeal's health path (its config/routes.rb: `get 'up' => 'rails/health#show'`),
 * answered as Rails' health controller answers — an HTML page with a green body — after the same
 * database check; when it fails, the red page with 503 and `Retry-After` (Rails answers 500 when
 * the application cannot boot; any load balancer reads both as down).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../db/client.ts';
import { pingDatabase } from '../db/queries/health.ts';
import { DATABASE_RETRY_AFTER_SECONDS } from '../db/unavailable.ts';

/** How long the database may take to answer `SELECT 1`, in milliseconds. */
const DATABASE_CHECK_TIMEOUT_MS = 2000;

/** Rails::HealthController's page, in the colour of the answer. */
const railsHealthPage = (color: 'green' | 'red') =>
  `<!DOCTYPE html><html><body style="background-color: ${color}"></body></html>`;

/** Registers `GET /health` and `GET /up` (and HEAD) on the app. */
export function registerHealthRoute(app: FastifyInstance, db: Db): void {
  /** True when the database answered; the cause of a failure goes to the log. */
  const databaseAnswers = async (request: FastifyRequest): Promise<boolean> => {
    try {
      await withTimeout(pingDatabase(db), DATABASE_CHECK_TIMEOUT_MS);
      return true;
    } catch (error) {
      request.log.warn({ err: error }, 'health check: the database did not answer');
      return false;
    }
  };
  app.get('/health', async (request, reply) => {
    if (await databaseAnswers(request)) return reply.code(200).send({ status: 'ok' });
    return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS)).send({ status: 'unavailable' });
  });
  app.get('/up', async (request, reply) => {
    const up = await databaseAnswers(request);
    if (!up) reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
    return reply.type('text/html; charset=utf-8').send(railsHealthPage(up ? 'green' : 'red'));
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
