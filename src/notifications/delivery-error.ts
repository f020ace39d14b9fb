/**
 * The typed error of every mail and SMS provider. It never reaches an API client: sending runs in
 * jobs after the request has answered (docuseal-behaviour.md §7.4, "SMTP failures don't affect
 * the API response"), so it is not an AppError. Jobs read `retryable` to decide between a retry
 * with backoff and giving up on the message; sendRetry is the backoff of every job that sends one.
 */
import type { RetryPolicy } from '../jobs/job-queue.ts';

/**
 * Runs of a sending job in all (requests, reminders, completed copies, declined notices). Delivery
 * gives a message up after as many attempts, so the last failed attempt is recorded as given up
 * (`fail_email` with `retrying: false`), not as retried.
 */
export const SEND_MAX_ATTEMPTS = 10;

/** Retry after base (SEND_RETRY_BASE_MS, 30 s), then twice as long each time, capped at an hour; 10 runs in all. */
export const sendRetry = (baseMs: number): RetryPolicy => ({
  maxAttempts: SEND_MAX_ATTEMPTS,
  delayMs: (attempt: number) => Math.min(2 ** attempt * baseMs, 3_600_000),
});

export interface DeliveryErrorOptions {
  /** true: the same message may succeed later (timeouts, connection errors, 5xx, 429, auth). */
  retryable: boolean;
  /** Which implementation failed: 'smtp', 'sendgrid', 'twilio'. */
  provider: string;
  /** HTTP status (SendGrid, Twilio) or SMTP reply code, when the provider answered. */
  status?: number;
  /** The provider's or the network's error code (ETIMEDOUT, ECONNREFUSED, Twilio's 21211…). */
  code?: string;
  cause?: unknown;
}

export class DeliveryError extends Error {
  override name = 'DeliveryError';
  readonly retryable: boolean;
  readonly provider: string;
  readonly status: number | undefined;
  readonly code: string | undefined;

  constructor(message: string, options: DeliveryErrorOptions) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable;
    this.provider = options.provider;
    this.status = options.status;
    this.code = options.code;
  }
}

/** An email provider (SMTP server, SendGrid) refused or could not take a message. */
export class MailDeliveryError extends DeliveryError {
  override name = 'MailDeliveryError';
}

/** An SMS provider (Twilio) refused or could not take a message. */
export class SmsDeliveryError extends DeliveryError {
  override name = 'SmsDeliveryError';
}

/**
 * Whether an HTTP answer from a provider is worth retrying: 5xx, 408 and 429 are; so are 401 and
 * 403, because a wrong or revoked key is a configuration fault that an operator fixes, and the
 * messages queued meanwhile should go out then rather than be dropped as failed. Other 4xx say
 * this message itself is wrong (bad address, bad content): retrying cannot help.
 */
export function isRetryableHttpStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429 || status === 401 || status === 403;
}

/** Logger methods the notification code uses (pino's and Fastify's loggers fit). */
export interface NotificationLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/**
 * The error of a sending job that found its message held by another worker (claimed within its
 * lease; src/notifications/deliver.ts outcome `in-progress`): retryable, so the job runs again
 * later rather than end with the message unsent, should that worker have died.
 * @param provider the mailer's or SMS sender's name
 */
export function inProgressError(provider: string): DeliveryError {
  return new DeliveryError('another worker is sending this message; retrying later', { retryable: true, provider });
}
