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

/** An error GraphQL produced itself (parse/validation/variable coercion), not a resolver failure. */
export function isGraphQLOwnError(error: unknown): boolean {
  return error instanceof GraphQLError && !error.originalError;
}

/**
 * Yoga's maskError: keeps AppErrors and GraphQL's own errors, masks the rest.
 * @param log receives masked errors with their cause
 */
export function createMaskError(log: (error: unknown) => void) {
  return (error: unknown, message: string): Error => {
    const appError = findAppError(error);
    if (appError) {
      const gqlError = error instanceof GraphQLError ? error : undefined;
      return new GraphQLError(appError.message, {
        nodes: gqlError?.nodes,
        path: gqlError?.path,
        extensions: { code: appError.code, ...(appError.details ? { details: appError.details } : {}) },
      });
    }
    if (isGraphQLOwnError(error)) return error as GraphQLError;
    if (error instanceof GraphQLError && error.originalError instanceof GraphQLError) return error;
    log(error);
    const gqlError = error instanceof GraphQLError ? error : undefined;
    return new GraphQLError(message, {
      nodes: gqlError?.nodes,
      path: gqlError?.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
  };
}
