/**
 * The GraphQL context: who is calling (from the API key) and the database, built the same way
 * for HTTP (Yoga), WebSocket (graphql-ws) and the REST gateway.
 */
import type { FastifyBaseLogger } from 'fastify';
import { apiKeyFromHeaders, authenticate, type Viewer } from '../accounts/authenticate.ts';
import { type ApiKeyScope, type FolderScope, missingScope } from '../accounts/key-scopes.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';
import type { FileStorage } from '../documents/storage.ts';
import type { Renderer } from '../rendering/renderer.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import { createLoaders, type Loaders } from './loaders.ts';
import type { SideEffects } from '../events/events.ts';
import type { LiveEvents } from '../events/pubsub.ts';
import type { EmailClickTags } from '../submissions/signing-links.ts';
import type { Clock } from '../util/clock.ts';

/** Signed URLs for stored files (`/file/<token>/<filename>`, expiring). */
export interface FileUrls {
  url(file: { uuid: string; filename: string }): string;
}

export interface GraphQLContext {
  db: Db;
  files: FileUrls;
  /** The click tags of signing links in request emails (src/signing-form/email-clicks.ts). */
  emailClicks: EmailClickTags;
  storage: FileStorage;
  renderer: Renderer;
  /** Background jobs (the queue; side effects of a change are recorded through `effects`). */
  jobs: JobQueue;
  /** Changes with side effects: jobs and domain events recorded in the change's transaction. */
  effects: SideEffects;
  /** Live events of the caller's account, for GraphQL subscriptions (src/events/pubsub.ts). */
  live: LiveEvents;
  /** Per-request batch loaders (one query for many parents). */
  loaders: Loaders;
  config: Config;
  logger: FastifyBaseLogger;
  /** The time reminders are judged by (buildApp's `clock`; src/submissions/reminders.ts). */
  clock: Clock;
  /** The authenticated caller, or null. Resolvers needing one call requireViewer(ctx). */
  viewer: Viewer | null;
  /**
   * The scope the operation needs of the caller's key (`read` for a query or subscription, `write`
   * for a mutation: src/accounts/key-scopes.ts), set once the operation is known (useKeyScopes,
   * src/graphql/key-scopes.ts; the REST gateway for its routes); requireViewer checks it.
   */
  operationScope?: ApiKeyScope | undefined;
  /** Caller's IP address and user agent, recorded on events. */
  ip: string | undefined;
  userAgent: string | undefined;
}

export interface RequestInfo {
  /** Reads a request header (case-insensitive). */
  header(name: string): string | null | undefined;
  ip?: string | undefined;
  /**
   * graphql-ws connection_init payload: `{"X-Auth-Token": key}`, `{"authToken": key}` or
   * `{"Authorization": "Bearer key"}`.
   */
  connectionParams?: Record<string, unknown> | undefined;
  /**
   * The request's logger (Fastify's request.log: every line carries the request id); the
   * context's `logger`. Default: the service's.
   */
  logger?: FastifyBaseLogger | undefined;
}

export type ContextFactory = (request: RequestInfo) => Promise<GraphQLContext>;

/** Builds contexts for one database/configuration. */
export function createContextFactory(deps: {
  db: Db;
  config: Config;
  logger: FastifyBaseLogger;
  files: FileUrls;
  emailClicks: EmailClickTags;
  storage: FileStorage;
  renderer: Renderer;
  jobs: JobQueue;
  effects: SideEffects;
  live: LiveEvents;
  clock: Clock;
}): ContextFactory {
  return async (request) => {
    const params = request.connectionParams ?? {};
    const fromParams = (name: string) => {
      const key = Object.keys(params).find((k) => k.toLowerCase() === name);
      const value = key ? params[key] : undefined;
      return typeof value === 'string' ? value : undefined;
    };
    const token =
      apiKeyFromHeaders(
        (name) => fromParams(name) ?? (name === 'x-auth-token' ? fromParams('authtoken') : undefined),
      ) ?? apiKeyFromHeaders((name) => request.header(name));
    return {
      db: deps.db,
      files: deps.files,
      emailClicks: deps.emailClicks,
      storage: deps.storage,
      renderer: deps.renderer,
      jobs: deps.jobs,
      effects: deps.effects,
      live: deps.live,
      loaders: createLoaders(deps.db),
      config: deps.config,
      logger: request.logger ?? deps.logger,
      clock: deps.clock,
      viewer: await authenticate(deps.db, token),
      ip: request.ip,
      userAgent: request.header('user-agent') ?? undefined,
    };
  };
}

/**
 * The caller, or an UNAUTHENTICATED error (REST: 401 `{"error":"Not authenticated"}`); FORBIDDEN
 * when its key lacks the scope the operation needs (`ctx.operationScope`). Every field that acts
 * for a key calls this (the signing form's, whose capability is the slug, do not), so the scope
 * is checked on each of them and on nothing else.
 * @throws AppError UNAUTHENTICATED; FORBIDDEN `Not authorized: this API key lacks the "write" scope`
 */
export function requireViewer(ctx: Pick<GraphQLContext, 'viewer' | 'operationScope'>): Viewer {
  if (!ctx.viewer) throw new AppError('UNAUTHENTICATED');
  const refusal = ctx.operationScope && missingScope(ctx.viewer, ctx.operationScope);
  if (refusal) throw refusal;
  return ctx.viewer;
}

/**
 * The caller as services take it: its account, user and the folders its key is limited to.
 * @throws AppError UNAUTHENTICATED or FORBIDDEN (requireViewer)
 */
export function requireActor(ctx: Pick<GraphQLContext, 'viewer' | 'operationScope'>): FolderScope & { userId: number } {
  const viewer = requireViewer(ctx);
  return { accountId: viewer.account.id, userId: viewer.user.id, folders: viewer.folders };
}
