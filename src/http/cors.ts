/**
 * Cross-origin requests (CORS, the Fetch standard's "CORS protocol") for the API surfaces a
 * browser on another site may call: `/api` (REST), `/graphql` and `/file` (signed file URLs). The
 * one place CORS headers are made: graphql-yoga's own CORS is off (src/graphql/server.ts), and no
 * route sets `Access-Control-*` itself.
 *
 * Library: @fastify/cors (Fastify's own plugin) rather than hand-written headers: it answers
 * preflights in the onRequest hook, before authentication and body parsing, and keeps `Vary`
 * right for caches.
 *
 * Rules (issue 12 §4; DocuSeal sends no CORS headers on its API, reference/docuseal-behaviour.md §2):
 * - only origins on the allow-list (`CORS_ORIGINS`, default none) get `Access-Control-Allow-Origin`,
 *   echoing their own origin; `*` on the list allows every origin (the header is then `*`);
 * - never `Access-Control-Allow-Credentials`: API keys travel in headers (`X-Auth-Token`,
 *   `Authorization`), Signet sets no cookies, so a browser never needs to send credentials;
 * - a preflight from an allowed origin answers 204 with the methods and the headers a client
 *   sends (X-Auth-Token, Authorization, Content-Type, Idempotency-Key, Range for files); from any other origin, or
 *   for another path, no CORS header at all (the browser then refuses the call).
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Paths (prefixes) that answer cross-origin requests from allowed origins. */
const CORS_PATHS = /^\/(?:api|graphql|file)(?:[/?#]|$)/;

/** Request headers an allowed origin may send. */
export const CORS_ALLOWED_HEADERS = [
  'X-Auth-Token',
  'Authorization',
  'Content-Type',
  'Range',
  'If-Range',
  'Idempotency-Key',
];
/** Response headers an allowed origin's script may read besides the CORS-safelisted ones. */
const CORS_EXPOSED_HEADERS = [
  'Content-Disposition',
  'Content-Range',
  'Content-Length',
  'ETag',
  'Retry-After',
  'Idempotent-Replayed',
];
const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Seconds a browser may keep a preflight's answer (Chromium caps it at 7,200). */
const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/**
 * Registers CORS on the app's root (so it covers routes registered after it, the REST gateway's
 * encapsulated ones included). Call before registering routes.
 * @param options.origins allowed origins as `scheme://host[:port]` (config.corsOrigins); `['*']`
 *   allows every origin; empty: no cross-origin access at all
 */
export async function registerCors(app: FastifyInstance, options: { origins: readonly string[] }): Promise<void> {
  const anyOrigin = options.origins.includes('*');
  const allowed = new Set(options.origins);
  await app.register(cors, {
    delegator: (request, callback) => {
      const origin = request.headers.origin;
      const ok = origin !== undefined && CORS_PATHS.test(request.url) && (anyOrigin || allowed.has(origin));
      if (!ok) return callback(null, { origin: false });
      callback(null, {
        origin: anyOrigin ? '*' : origin,
        credentials: false,
        methods: CORS_METHODS,
        allowedHeaders: CORS_ALLOWED_HEADERS,
        exposedHeaders: CORS_EXPOSED_HEADERS,
        maxAge: PREFLIGHT_MAX_AGE_SECONDS,
      });
    },
  });
}
