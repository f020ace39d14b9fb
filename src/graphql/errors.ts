/**
 * How errors leave the GraphQL API: AppErrors keep their message and carry `extensions.code`;
 * a database outage becomes AppError UNAVAILABLE, answered with HTTP 503 and `Retry-After`
 * (src/db/unavailable.ts); GraphQL's own errors (syntax, validation) pass as they are; anything
 * else is logged with its cause and replaced by "Unexpected error." (Yoga maskedErrors).
 */
import { GraphQLError } from 'graphql';
import { type AppError, isAppError } from '../errors.ts';
import { databaseUnavailableError, isDatabaseUnavailable } from '../db/unavailable.ts';

/**
 * The AppError an error stands for: the first AppError in its cause chain (GraphQL wraps
 * resolver errors in `originalError`), else UNAVAILABLE when it is a database outage
 * (isDatabaseUnavailable), else undefined (an unexpected error). Every adapter (REST gateway,
 * GraphQL masking, Fastify's error handler) maps errors through this.
 */
export function findAppError(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth += 1) {
    if (isAppError(current)) return current;
    current = (current as { originalError?: unknown }).originalError ?? (current as { cause?: unknown }).cause;
  }
  return isDatabaseUnavailable(error) ? databaseUnavailableError(error) : undefined;
}

/**
 * Seconds after which a client may retry (`Retry-After`), for an AppError that says so in
 * `details.retryAfterSeconds` (a database outage); undefined otherwise.
 */
export function retryAfterSecondsOf(error: AppError): number | undefined {
  const seconds = error.details?.retryAfterSeconds;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds) : undefined;
}

/**
 * An error GraphQL produced itself (syntax, validation, variable coercion), not a resolver
 * failure: it has no path, and no cause other than another GraphQL error.
 */
export function isGraphQLOwnError(error: unknown): boolean {
  return (
    error instanceof GraphQLError &&
    !error.path &&
    (!error.originalError || error.originalError instanceof GraphQLError)
  );
}

/**
 * Yoga's maskError: keeps AppErrors (with `extensions.code`) and GraphQL's own errors, masks the
 * rest as "Unexpected error." with code INTERNAL_SERVER_ERROR. Yoga logs every error this
 * replaces, with its cause; errors returned unchanged are expected ones and not logged.
 * An AppError with a retry delay (a database outage: UNAVAILABLE) also sets the HTTP answer:
 * its status (503) and `Retry-After`, through Yoga's `extensions.http`, which Yoga removes from
 * the body; Yoga logs the outage it replaces (src/graphql/server.ts: as a warning).
 */
export function createMaskError() {
  return (error: unknown, message: string): Error => {
    const appError = findAppError(error);
    const gqlError = error instanceof GraphQLError ? error : undefined;
    if (appError) {
      const retryAfter = retryAfterSecondsOf(appError);
      if (retryAfter === undefined) {
        if (gqlError && gqlError.extensions?.code === appError.code) return gqlError;
        return new GraphQLError(appError.message, {
          nodes: gqlError?.nodes,
          path: gqlError?.path,
          extensions: appError.extensions,
        });
      }
      return new GraphQLError(appError.message, {
        nodes: gqlError?.nodes,
        path: gqlError?.path,
        extensions: {
          ...appError.extensions,
          http: { status: appError.status, headers: { 'Retry-After': String(retryAfter) } },
        },
      });
    }
    if (isGraphQLOwnError(error)) return error as GraphQLError;
    if (gqlError && gqlError.originalError instanceof GraphQLError) return gqlError;
    return new GraphQLError(message, {
      nodes: gqlError?.nodes,
      path: gqlError?.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
  };
}

/**
 * A copy of a GraphQL error with other `extensions` (message, locations, path and original error
 * kept): GraphQLError's fields are read-only, so changing what an answer carries means a copy.
 */
export function withExtensions(error: GraphQLError, extensions: GraphQLError['extensions']): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions,
  });
}
