/**
 * The SMS sender interface and its implementations, chosen by configuration (DESIGN.md,
 * "Components"): Twilio when TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM are all set,
 * else the outbox, which only logs (the sms_messages row is the outbox; see deliver.ts).
 */
import type { Config } from '../config.ts';
import { SmsDeliveryError, isRetryableHttpStatus, type NotificationLogger } from './delivery-error.ts';

/** One SMS. Numbers are E.164 (`+14155550100`). */
export interface OutgoingSms {
  to: string;
  /** Sender number; the configured TWILIO_FROM when absent. */
  from?: string;
  body: string;
}

export interface SmsSender {
  name: 'outbox' | 'twilio';
  /**
   * Hands one SMS to the provider.
   * @returns the provider's id for it (Twilio's message `sid`); none for the outbox
   * @throws SmsDeliveryError with `retryable` telling a transient failure from a refusal
   */
  send(message: OutgoingSms): Promise<{ providerMessageId?: string }>;
}

const DEFAULT_TIMEOUT_MS = 15_000;

/**
 * Picks the SMS sender for the configuration: Twilio (`twilio` credentials, requests to
 * `twilioApiUrl`), else the outbox. Creating one makes no network call.
 * @param options.timeout limit of one Twilio request, in milliseconds (default 15 s)
 */
export function createSmsSender(
  config: Pick<Config, 'twilio' | 'twilioApiUrl'>,
  logger: NotificationLogger,
  options: { timeout?: number } = {},
): SmsSender {
  if (config.twilio)
    return createTwilioSender({ ...config.twilio, apiUrl: config.twilioApiUrl, timeout: options.timeout });
  return createOutboxSmsSender(logger);
}

/** The default: nothing leaves the machine; the message is logged at info (number and length). */
export function createOutboxSmsSender(logger: NotificationLogger): SmsSender {
  return {
    name: 'outbox',
    async send(message) {
      logger.info(
        { to: message.to, from: message.from, length: message.body.length },
        'SMS kept in the outbox (no TWILIO_* configured)',
      );
      return {};
    },
  };
}

/**
 * Twilio's Programmable Messaging API, as Twilio documents it: `POST
 * {apiUrl}/2010-04-01/Accounts/{AccountSid}/Messages.json`, form-encoded `To`, `From`, `Body`,
 * HTTP Basic auth `AccountSid:AuthToken`; 201 with the message resource (its `sid` is our provider
 * id). Plain fetch rather than the `twilio` package: one small call, a dependency less, a timeout
 * we control, and the request is easy to check against a local server in tests.
 * Errors: Twilio answers `{code, message, more_info, status}`; see isRetryableHttpStatus. No
 * answer (refused, reset, timeout) is retryable.
 */
export function createTwilioSender(options: {
  accountSid: string;
  authToken: string;
  from: string;
  apiUrl: string;
  /** Milliseconds; default 15 s. */
  timeout?: number;
}): SmsSender {
  const url =
    `${options.apiUrl.replace(/\/+$/, '')}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}` +
    `/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`).toString('base64')}`;
  const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
  return {
    name: 'twilio',
    async send(message) {
      const form = new URLSearchParams({ To: message.to, From: message.from ?? options.from, Body: message.body });
      let response: Response;
      let text: string;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: {
            authorization,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: form.toString(),
          signal: AbortSignal.timeout(timeout),
        });
        text = await response.text();
      } catch (error) {
        const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
        const code = e.name === 'TimeoutError' ? 'ETIMEDOUT' : (e.cause?.code ?? e.name);
        const detail = e.name === 'TimeoutError' ? `no answer within ${timeout} ms` : (e.cause?.message ?? e.message);
        throw new SmsDeliveryError(`Twilio: ${detail}`, { retryable: true, provider: 'twilio', code, cause: error });
      }
      const body = parseJson(text) as { sid?: unknown; code?: unknown; message?: unknown } | undefined;
      if (!response.ok) {
        const detail = typeof body?.message === 'string' ? body.message : text.slice(0, 200) || response.statusText;
        throw new SmsDeliveryError(`Twilio ${response.status}: ${detail}`, {
          retryable: isRetryableHttpStatus(response.status),
          provider: 'twilio',
          status: response.status,
          code: body?.code !== undefined ? String(body.code) : undefined,
        });
      }
      return { providerMessageId: typeof body?.sid === 'string' ? body.sid : undefined };
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
