/**
 * Fastify's error handler for the routes outside the REST gateway and GraphQL (which map errors
 * themselves): the signing page `/s/:slug`, files `/file/...`, the page's assets. An AppError,
 * or a database outage (src/db/unavailable.ts), is answered with its status and DocuSeal's
 * `{"error": "..."}` body — an HTML page instead for a browser loading a page — and
 * `Retry-After` when it says when to retry (503 during an outage). Anything else goes on to
 * Fastify's default handler (its status, or 500 with the cause logged).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { restErrorFor, sendRestError } from './error-bodies.ts';
import type { AppError } from '../errors.ts';
import { findAppError } from '../graphql/errors.ts';

/** Sets the app's root error handler (encapsulated plugins with their own keep theirs). */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const appError = findAppError(error);
    // Fastify's default handler: its own errors' statuses (400 for a bad body...), else 500.
    if (!appError) throw error;
    if (appError.code === 'UNAVAILABLE' && appError.cause)
      request.log.warn(
        { err: appError.cause },
        `${request.method} ${request.routeOptions.url ?? request.url}: service unavailable`,
      );
    const response = restErrorFor(appError);
    if (wantsHtml(request)) return sendHtml(reply, response.status, appError, response.headers);
    return sendRestError(reply, response);
  });
}

/** A browser navigating to a page (the signing form, `GET /`) asks for HTML first. */
export function wantsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return request.method === 'GET' && /^\s*text\/html\b/.test(accept);
}

function sendHtml(
  reply: FastifyReply,
  status: number,
  error: AppError,
  headers: Record<string, string> | undefined,
): FastifyReply {
  if (headers) reply.headers(headers);
  const message = escapeHtml(error.message);
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" ` +
        `content="width=device-width, initial-scale=1"><title>${message}</title></head>` +
        `<body><main><h1>${message}</h1>${status === 503 ? '<p>Reload this page in a few seconds.</p>' : ''}` +
        `</main></body></html>`,
    );
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
