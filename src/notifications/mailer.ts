/**
 * The mailer interface and its three implementations, chosen by configuration (DESIGN.md,
 * "Components"): SendGrid when SENDGRID_API_KEY is set, else SMTP when SMTP_URL is set, else the
 * outbox, which only logs (the email_messages row is the outbox; see deliver.ts).
 */
import sendgridClient from '@sendgrid/client';
import sendgridMail from '@sendgrid/mail';
import nodemailer from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import type { Config } from '../config.ts';
import { MailDeliveryError, isRetryableHttpStatus, type NotificationLogger } from './delivery-error.ts';

// Both SendGrid packages export a shared instance with its class attached (CommonJS); we make
// our own instances so that settings (base URL, timeout) never leak between mailers.
// (The typings describe the shared instances only, hence the casts.)
const { Client } = sendgridClient as unknown as { Client: new () => typeof sendgridClient };
const { MailService } = sendgridMail as unknown as { MailService: new () => typeof sendgridMail };

/**
 * One email as handed to a provider. Addresses are RFC 5322 mailboxes: `a@b.c` or
 * `Name <a@b.c>`. `bcc` goes into the envelope only, never into a header.
 */
export interface OutgoingEmail {
  /**
   * The Message-ID header (RFC 5322 §3.6.4, with its angle brackets), the same on every send of
   * one stored email (src/notifications/deliver.ts messageIdFor); SMTP only (SendGrid sets its own).
   */
  messageId?: string;
  from: string;
  to: string[];
  cc?: string[];
  bcc?: string[];
  replyTo?: string;
  subject: string;
  /** text/plain part. */
  text: string;
  /** text/html part, when there is one. */
  html?: string;
  /** Files attached to the message (e.g. signed documents). */
  attachments?: EmailAttachment[];
}

/** A file attached to an email. */
export interface EmailAttachment {
  filename: string;
  /** MIME type, e.g. application/pdf. */
  contentType: string;
  content: Uint8Array;
}

export interface Mailer {
  name: 'outbox' | 'smtp' | 'sendgrid';
  /**
   * Hands one message to the provider.
   * @returns the provider's id for it (SendGrid's X-Message-Id, SMTP's Message-ID); none for the outbox
   * @throws MailDeliveryError with `retryable` telling a transient failure from a refusal
   */
  send(message: OutgoingEmail): Promise<{ providerMessageId?: string }>;
}

/** Time limits of provider calls, in milliseconds. */
export interface MailerTimeouts {
  /** SMTP: TCP (and TLS) connection established. Default 10 s. */
  connection?: number;
  /** SMTP: server greeting after connecting. Default 10 s. */
  greeting?: number;
  /** SMTP: inactivity on the socket. SendGrid: the whole request. Default 30 s. */
  socket?: number;
}

const DEFAULT_TIMEOUTS: Required<MailerTimeouts> = { connection: 10_000, greeting: 10_000, socket: 30_000 };

/**
 * Picks the mailer for the configuration: SendGrid (`sendgridApiKey`, requests to
 * `sendgridApiUrl`), else SMTP (`smtpUrl`, smtp:// or smtps://, credentials in the URL), else the
 * outbox. Creating one makes no network call.
 * @param options.timeouts limits of provider calls (tests shorten them)
 */
export function createMailer(
  config: Pick<Config, 'sendgridApiKey' | 'sendgridApiUrl' | 'smtpUrl'>,
  logger: NotificationLogger,
  options: { timeouts?: MailerTimeouts } = {},
): Mailer {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  if (config.sendgridApiKey) {
    return createSendGridMailer({
      apiKey: config.sendgridApiKey,
      apiUrl: config.sendgridApiUrl,
      timeout: timeouts.socket,
    });
  }
  if (config.smtpUrl) return createSmtpMailer(config.smtpUrl, timeouts);
  return createOutboxMailer(logger);
}

/** The default: nothing leaves the machine; the message is logged at info (recipients and subject). */
export function createOutboxMailer(logger: NotificationLogger): Mailer {
  return {
    name: 'outbox',
    async send(message) {
      const { to, cc, bcc } = withDistinctRecipients(message);
      logger.info(
        {
          to,
          cc,
          bcc,
          replyTo: message.replyTo,
          subject: message.subject,
          attachments: message.attachments?.map((a) => a.filename),
        },
        'email kept in the outbox (no SENDGRID_API_KEY or SMTP_URL configured)',
      );
      return {};
    },
  };
}

/**
 * SMTP through nodemailer, one connection per message (no pool: sends are spread over jobs).
 * Replies follow RFC 5321 §4.2.1: 4yz is transient (retryable), 5yz permanent, except 530/534/535
 * (authentication), which is our configuration and so retryable. Connection, TLS, DNS and
 * timeout errors are retryable.
 */
export function createSmtpMailer(smtpUrl: string, timeouts: MailerTimeouts = {}): Mailer {
  const limits = { ...DEFAULT_TIMEOUTS, ...timeouts };
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: limits.connection,
    greetingTimeout: limits.greeting,
    socketTimeout: limits.socket,
  });
  return {
    name: 'smtp',
    async send(message) {
      const recipients = withDistinctRecipients(message);
      try {
        const info = await transport.sendMail({
          ...(message.messageId ? { messageId: message.messageId } : {}),
          from: message.from,
          to: recipients.to,
          cc: recipients.cc.length ? recipients.cc : undefined,
          bcc: recipients.bcc.length ? recipients.bcc : undefined,
          replyTo: message.replyTo,
          subject: message.subject,
          text: message.text,
          html: message.html,
          attachments: message.attachments?.map((a) => ({
            filename: a.filename,
            contentType: a.contentType,
            content: Buffer.from(a.content),
          })),
        });
        return { providerMessageId: info.messageId };
      } catch (error) {
        throw smtpError(error);
      }
    },
  };
}

const SMTP_AUTH_REPLIES = new Set([530, 534, 535]);
/** nodemailer codes raised before anything reached the server about this message's content. */
const SMTP_PERMANENT_CODES = new Set(['EENVELOPE', 'EMESSAGE', 'ECONFIG', 'EREQUIRETLS']);

function smtpError(error: unknown): MailDeliveryError {
  const e = error as { message?: string; code?: string; responseCode?: number; response?: string };
  const status = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  let retryable: boolean;
  if (status !== undefined) retryable = status < 500 || SMTP_AUTH_REPLIES.has(status);
  else retryable = !(e.code && SMTP_PERMANENT_CODES.has(e.code));
  const detail = e.response ?? e.message ?? String(error);
  return new MailDeliveryError(`SMTP: ${detail}`, { retryable, provider: 'smtp', status, code: e.code, cause: error });
}

/**
 * SendGrid's v3 Mail Send API (POST {apiUrl}/v3/mail/send, Bearer key) through @sendgrid/mail,
 * on a client of its own (not the package's shared singleton) whose base URL is `apiUrl`.
 * 202 → sent, with the X-Message-Id header as the provider id. Errors: see isRetryableHttpStatus;
 * no answer (refused, reset, timeout) is retryable.
 */
export function createSendGridMailer(options: { apiKey: string; apiUrl: string; timeout?: number }): Mailer {
  const client = new Client();
  client.setApiKey(options.apiKey);
  // setApiKey resets the base URL to the public one, so ours goes after it.
  client.setDefaultRequest('baseUrl', `${options.apiUrl.replace(/\/+$/, '')}/`);
  const service = new MailService();
  service.setClient(client);
  service.setTimeout(options.timeout ?? DEFAULT_TIMEOUTS.socket);
  return {
    name: 'sendgrid',
    async send(message) {
      const recipients = withDistinctRecipients(message);
      let response: Awaited<ReturnType<typeof service.send>>[0];
      try {
        [response] = await service.send({
          from: toSendGridAddress(message.from),
          to: recipients.to.map(toSendGridAddress),
          cc: recipients.cc.length ? recipients.cc.map(toSendGridAddress) : undefined,
          bcc: recipients.bcc.length ? recipients.bcc.map(toSendGridAddress) : undefined,
          replyTo: message.replyTo ? toSendGridAddress(message.replyTo) : undefined,
          subject: message.subject,
          // The helper adds text/plain before text/html, the order SendGrid requires.
          text: message.text,
          html: message.html,
          attachments: message.attachments?.map((a) => ({
            content: Buffer.from(a.content).toString('base64'),
            filename: a.filename,
            type: a.contentType,
            disposition: 'attachment',
          })),
        });
      } catch (error) {
        throw sendGridError(error);
      }
      const id = response.headers['x-message-id'];
      return { providerMessageId: typeof id === 'string' && id ? id : undefined };
    },
  };
}

function sendGridError(error: unknown): MailDeliveryError {
  const e = error as { code?: unknown; message?: string; response?: { body?: unknown } };
  if (typeof e.code === 'number') {
    // A ResponseError: SendGrid answered ≥ 400 with {errors: [{message, field, help}]}.
    const body = e.response?.body as { errors?: Array<{ message?: string; field?: string | null }> } | undefined;
    const reasons = (body?.errors ?? [])
      .map((item) => [item.field, item.message].filter(Boolean).join(': '))
      .filter(Boolean);
    const detail = reasons.length ? reasons.join('; ') : e.message || 'request refused';
    return new MailDeliveryError(`SendGrid ${e.code}: ${detail}`, {
      retryable: isRetryableHttpStatus(e.code),
      provider: 'sendgrid',
      status: e.code,
      cause: error,
    });
  }
  // No answer: axios' network and timeout errors carry a string code (ECONNREFUSED, ECONNABORTED…).
  if (typeof e.code === 'string') {
    return new MailDeliveryError(`SendGrid: ${e.message ?? e.code}`, {
      retryable: true,
      provider: 'sendgrid',
      code: e.code,
      cause: error,
    });
  }
  // Anything else was thrown before a request was made (the helper refused the message).
  return new MailDeliveryError(`SendGrid: ${e.message ?? String(error)}`, {
    retryable: false,
    provider: 'sendgrid',
    cause: error,
  });
}

function toSendGridAddress(mailbox: string): { email: string; name?: string } {
  const parsed = parseMailbox(mailbox);
  return parsed.name ? { email: parsed.address, name: parsed.name } : { email: parsed.address };
}

/**
 * Splits one RFC 5322 mailbox ("Name <a@b.c>", "a@b.c", quoted names with commas) into its
 * display name and address.
 * @throws MailDeliveryError (permanent) when it holds no address
 */
export function parseMailbox(mailbox: string): { name: string; address: string } {
  const [first] = addressparser(mailbox, { flatten: true });
  if (!first?.address) {
    throw new MailDeliveryError(`not an email address: ${JSON.stringify(mailbox)}`, {
      retryable: false,
      provider: 'mailer',
    });
  }
  return { name: first.name, address: first.address };
}

/**
 * The message's recipients with each address once (case-insensitive): cc loses what is in to,
 * bcc what is in to or cc. SendGrid refuses a personalization that repeats an address (400), and
 * nobody needs a message twice.
 */
export function withDistinctRecipients(message: Pick<OutgoingEmail, 'to' | 'cc' | 'bcc'>): {
  to: string[];
  cc: string[];
  bcc: string[];
} {
  const seen = new Set<string>();
  const keep = (list: string[] | undefined) =>
    (list ?? []).filter((mailbox) => {
      const key = (addressparser(mailbox, { flatten: true })[0]?.address || mailbox).trim().toLowerCase();
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  const to = keep(message.to);
  const cc = keep(message.cc);
  const bcc = keep(message.bcc);
  return { to, cc, bcc };
}
