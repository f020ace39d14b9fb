/**
 * How errors leave the GraphQL API: AppErrors keep their message and carry `extensions.code`;
 * GraphQL's own errors (syntax, validation) pass as they are; anything else is logged with its
 * cause and replaced by "Unexpected error." (Yoga maskedErrors).
 */
import { GraphQLError } from 'graphql';
import { isAppError } from '../errors.ts';

/** The first AppError in an error's cause chain (GraphQL wraps resolver errors in `originalError`). */
export function findAppError(error: unknown): import('../errors.ts').AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth += 1) {
    if (isAppError(current)) return current;
    current = (current as { originalError?: unknown }).originalError ?? (current as { cause?: unknown }).cause;
  }
  return undefined;
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
 */
export function createMaskError() {
  return (error: unknown, message: string): Error => {
    const appError = findAppError(error);
    const gqlError = error instanceof GraphQLError ? error : undefined;
    if (appError) {
      if (gqlError && gqlError.extensions?.code === appError.code) return gqlError;
      return new GraphQLError(appError.message, { nodes: gqlError?.nodes, path: gqlError?.path, extensions: appError.extensions });
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
