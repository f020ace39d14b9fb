/**
 * The one error type of the service. Services throw AppError with a code; each adapter maps the
 * code once: GraphQL puts it in `extensions.code`, the REST layer turns it into DocuSeal's status
 * and body (reference/docuseal-behaviour.md §3). Anything that is not an AppError is unexpected:
 * logged with its cause and masked (GraphQL "Unexpected error.", REST 500 `{"status":500}`).
 */

export const ERROR_CODES = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  BAD_REQUEST: 400,
  PAYLOAD_TOO_LARGE: 413,
  VALIDATION: 422,
  /** An Idempotency-Key sent with a request other than the one it was first used with (docs/idempotency.md). */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** An Idempotency-Key whose first request is still running (docs/idempotency.md). */
  IDEMPOTENCY_KEY_IN_USE: 409,
  RATE_LIMITED: 429,
  /** A dependency the request needs (a renderer, a remote service) is missing or down. */
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Default user-safe messages, DocuSeal's wording where it has one. */
const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  UNAUTHENTICATED: 'Not authenticated',
  FORBIDDEN: 'Not authorized',
  NOT_FOUND: 'Not found',
  BAD_REQUEST: 'Bad request',
  PAYLOAD_TOO_LARGE: 'Request body is too large',
  VALIDATION: 'Validation failed',
  IDEMPOTENCY_KEY_REUSED: 'This Idempotency-Key was used with a different request',
  IDEMPOTENCY_KEY_IN_USE: 'A request with this Idempotency-Key is in progress',
  RATE_LIMITED: 'Too many requests',
  UNAVAILABLE: 'Service unavailable',
};

export class AppError extends Error {
  override name = 'AppError';
  readonly code: ErrorCode;
  /** Extra machine-readable detail (e.g. the path of an invalid field); safe to show. */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    super(message ?? DEFAULT_MESSAGES[code], { cause: options?.cause });
    this.code = code;
    this.details = options?.details;
  }

  /**
   * GraphQL copies an original error's `extensions` onto the GraphQLError it wraps it in, so a
   * resolver's AppError arrives at clients with `extensions.code` without further mapping.
   */
  get extensions(): Record<string, unknown> {
    return { code: this.code, ...(this.details ? { details: this.details } : {}) };
  }

  /** HTTP status for this code. */
  get status(): number {
    return ERROR_CODES[this.code];
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
