/**
 * Typed configuration from the environment. Every variable, its default and its meaning is
 * listed in README.md ("Configuration"); this file is the single place that reads process.env
 * for the service and the CLI.
 */
import path from 'node:path';
import { z } from 'zod';

const boolFromEnv = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no', ''])
  .transform((v) => v === '1' || v === 'true' || v === 'yes');

const intFromEnv = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: intFromEnv(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Public base URL used in links (embed_src, file URLs). Defaults to http://localhost:PORT. */
  APP_URL: z.string().url().optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  /** When unset, an embedded PostgreSQL is started with its data under DATA_DIR/postgres. */
  DATABASE_URL: z.string().min(1).optional(),
  /** Port of the embedded PostgreSQL on 127.0.0.1; by default a free port chosen at first start and remembered. */
  EMBEDDED_POSTGRES_PORT: intFromEnv(1, 65535).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Largest accepted request body, in megabytes (base64 documents make bodies large). */
  MAX_BODY_SIZE_MB: z.coerce.number().positive().max(1024).default(50),
  /** GraphiQL at GET /graphql; on by default outside production. */
  GRAPHIQL: boolFromEnv.optional(),
  /** Seconds SIGTERM waits for in-flight requests before closing anyway. */
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(10),
  /** Create a development account and print its API key on the first start (empty database). */
  CREATE_DEV_ACCOUNT: boolFromEnv.optional(),
  /** Signs file URLs. Set the same value on every instance; otherwise one is generated under DATA_DIR. */
  SECRET_KEY_BASE: z.string().min(32).optional(),
  /** Lifetime of signed file URLs (/file/<token>/<name>), in minutes (DocuSeal's default). */
  FILE_URLS_EXPIRE_MINUTES: z.coerce.number().positive().max(525_600).default(40),
  /** Let `file`/`default_value` URLs point at private and loopback addresses (tests only). */
  DOWNLOAD_ALLOW_PRIVATE: boolFromEnv.optional(),
  /** Largest file fetched from a URL, in megabytes. */
  DOWNLOAD_MAX_MB: z.coerce.number().positive().max(1024).default(50),
  /** Time allowed to fetch a file from a URL, in seconds. */
  DOWNLOAD_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(20),
  /** Gotenberg 8 base URL for HTML/DOCX → PDF; unset: local Chromium and LibreOffice. */
  GOTENBERG_URL: z.string().url().optional(),
  /** Local Chromium for HTML → PDF; default: the first of chromium, chromium-browser, google-chrome on PATH. */
  CHROMIUM_PATH: z.string().min(1).optional(),
  /** Local LibreOffice for DOCX → PDF; default: soffice (or libreoffice) on PATH. */
  SOFFICE_PATH: z.string().min(1).optional(),
  /** Time allowed for one HTML/DOCX conversion, in seconds. */
  RENDER_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(60),
  /** Conversions run at once per instance. */
  RENDER_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
  /** Jobs on MongoDB (Agenda's mongo backend) instead of the service's PostgreSQL. */
  JOBS_MONGODB_URL: z.string().min(1).optional(),
  /** Seconds before a job held by an instance that stopped (crash, kill) runs on another (running jobs renew their lock). */
  JOBS_LOCK_LIFETIME_SECONDS: z.coerce.number().positive().max(86_400).default(600),
  /** Sender of every email ("Signet <no-reply@example.com>"). */
  MAIL_FROM: z.string().min(3).default('Signet <no-reply@signet.local>'),
  /** Send email through SendGrid with this API key. */
  SENDGRID_API_KEY: z.string().min(1).optional(),
  /** SendGrid's API base URL (tests point it at a local server). */
  SENDGRID_API_URL: z.string().url().default('https://api.sendgrid.com'),
  /** Send email through this SMTP server (smtp://user:pass@host:port, smtps://…). */
  SMTP_URL: z.string().url().optional(),
  /** Send SMS through Twilio: account SID, auth token and sender number (E.164). */
  TWILIO_ACCOUNT_SID: z.string().min(1).optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  TWILIO_FROM: z.string().min(1).optional(),
  /** Twilio's API base URL (tests point it at a local server). */
  TWILIO_API_URL: z.string().url().default('https://api.twilio.com'),
  /** First retry delay of a failed email/SMS send, in milliseconds; doubles per attempt (capped at an hour). */
  SEND_RETRY_BASE_MS: z.coerce.number().int().positive().default(30_000),
  /** PKCS#12 file whose certificate signs completed PDFs; unset: one generated once and stored in the database. */
  SIGNING_P12_PATH: z.string().min(1).optional(),
  /** Passphrase of SIGNING_P12_PATH. */
  SIGNING_P12_PASSWORD: z.string().optional(),
  /**
   * Tests only (refused unless NODE_ENV=test): `<point>:<ms>` makes the completion job sleep at a
   * point so that a test can kill the process there; points: `drawn` (documents stored, transaction
   * not committed), `committed` (committed, events not emitted). See src/signing/complete-submission.ts.
   */
  TEST_PAUSE_COMPLETION: z
    .string()
    .regex(/^(drawn|committed):\d+$/, 'expected <drawn|committed>:<milliseconds>')
    .optional(),
  /** Redis for live events across instances (GraphQL subscriptions); unset: in-process. */
  REDIS_URL: z
    .string()
    .url()
    .refine((v) => /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL')
    .optional(),
  /** Webhook retry unit, in milliseconds: retry after 2^attempt × this; the 48-hour window scales with it. */
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().positive().default(60_000),
  /** Let webhooks go to private, loopback and other non-public addresses (tests only). */
  WEBHOOK_ALLOW_PRIVATE: boolFromEnv.optional(),
  /** Comma-separated host names, IP addresses or CIDR ranges webhooks may reach even when not public. */
  WEBHOOK_ALLOWED_HOSTS: z.string().optional(),
  /** Time allowed to connect to a webhook receiver, in seconds. */
  WEBHOOK_CONNECT_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(8),
  /** Time allowed for a webhook receiver's whole answer once connected, in seconds. */
  WEBHOOK_RESPONSE_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(15),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  nodeEnv: Env['NODE_ENV'];
  port: number;
  host: string;
  appUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  embeddedPostgresPort: number | undefined;
  logLevel: Env['LOG_LEVEL'];
  /** Bytes. */
  maxBodySize: number;
  graphiql: boolean;
  /** Milliseconds. */
  shutdownTimeout: number;
  createDevAccount: boolean;
  /** Undefined: generated and kept under DATA_DIR (see src/documents/secret-key.ts). */
  secretKeyBase: string | undefined;
  /** Milliseconds. */
  fileUrlTtl: number;
  downloadAllowPrivate: boolean;
  /** Bytes. */
  downloadMaxBytes: number;
  /** Milliseconds. */
  downloadTimeout: number;
  gotenbergUrl: string | undefined;
  chromiumPath: string | undefined;
  sofficePath: string | undefined;
  /** Milliseconds. */
  renderTimeout: number;
  renderConcurrency: number;
  jobsMongodbUrl: string | undefined;
  /** Milliseconds. */
  jobsLockLifetime: number;
  mailFrom: string;
  sendgridApiKey: string | undefined;
  sendgridApiUrl: string;
  smtpUrl: string | undefined;
  twilio: { accountSid: string; authToken: string; from: string } | undefined;
  twilioApiUrl: string;
  /** Milliseconds. */
  sendRetryBase: number;
  signingP12Path: string | undefined;
  signingP12Password: string;
  /** TEST_PAUSE_COMPLETION (tests only): where the completion job sleeps, and for how many milliseconds. */
  testPauseCompletion: { point: 'drawn' | 'committed'; ms: number } | undefined;
  /** redis:// URL: live events cross instances through Redis; undefined: in-process. */
  redisUrl: string | undefined;
  webhooks: {
    /** Milliseconds. */
    retryBase: number;
    allowPrivate: boolean;
    /** Lower-case host names, IP addresses and CIDR ranges (WEBHOOK_ALLOWED_HOSTS). */
    allowedHosts: string[];
    /** Milliseconds. */
    connectTimeout: number;
    /** Milliseconds. */
    responseTimeout: number;
  };
}

/** Thrown when an environment variable has a value the service cannot use. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads and validates the configuration.
 * @param env the environment (defaults to process.env); empty strings count as unset.
 * @throws ConfigError naming every invalid variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${detail}`);
  }
  const e = parsed.data;
  if (e.TEST_PAUSE_COMPLETION && e.NODE_ENV !== 'test') {
    throw new ConfigError('Invalid configuration: TEST_PAUSE_COMPLETION: only allowed with NODE_ENV=test');
  }
  const [pausePoint, pauseMs] = e.TEST_PAUSE_COMPLETION?.split(':') ?? [];
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    appUrl: (e.APP_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    dataDir: path.resolve(e.DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    embeddedPostgresPort: e.EMBEDDED_POSTGRES_PORT,
    logLevel: e.LOG_LEVEL,
    maxBodySize: Math.floor(e.MAX_BODY_SIZE_MB * 1024 * 1024),
    graphiql: e.GRAPHIQL ?? e.NODE_ENV !== 'production',
    shutdownTimeout: e.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    createDevAccount: e.CREATE_DEV_ACCOUNT ?? true,
    secretKeyBase: e.SECRET_KEY_BASE,
    fileUrlTtl: e.FILE_URLS_EXPIRE_MINUTES * 60_000,
    downloadAllowPrivate: e.DOWNLOAD_ALLOW_PRIVATE ?? false,
    downloadMaxBytes: Math.floor(e.DOWNLOAD_MAX_MB * 1024 * 1024),
    downloadTimeout: e.DOWNLOAD_TIMEOUT_SECONDS * 1000,
    gotenbergUrl: e.GOTENBERG_URL?.replace(/\/+$/, ''),
    chromiumPath: e.CHROMIUM_PATH,
    sofficePath: e.SOFFICE_PATH,
    renderTimeout: e.RENDER_TIMEOUT_SECONDS * 1000,
    renderConcurrency: e.RENDER_CONCURRENCY,
    jobsMongodbUrl: e.JOBS_MONGODB_URL,
    jobsLockLifetime: Math.round(e.JOBS_LOCK_LIFETIME_SECONDS * 1000),
    mailFrom: e.MAIL_FROM,
    sendgridApiKey: e.SENDGRID_API_KEY,
    sendgridApiUrl: e.SENDGRID_API_URL.replace(/\/+$/, ''),
    smtpUrl: e.SMTP_URL,
    twilio:
      e.TWILIO_ACCOUNT_SID && e.TWILIO_AUTH_TOKEN && e.TWILIO_FROM
        ? { accountSid: e.TWILIO_ACCOUNT_SID, authToken: e.TWILIO_AUTH_TOKEN, from: e.TWILIO_FROM }
        : undefined,
    twilioApiUrl: e.TWILIO_API_URL.replace(/\/+$/, ''),
    sendRetryBase: e.SEND_RETRY_BASE_MS,
    signingP12Path: e.SIGNING_P12_PATH,
    signingP12Password: e.SIGNING_P12_PASSWORD ?? '',
    testPauseCompletion: pausePoint ? { point: pausePoint as 'drawn' | 'committed', ms: Number(pauseMs) } : undefined,
    redisUrl: e.REDIS_URL,
    webhooks: {
      retryBase: e.WEBHOOK_RETRY_BASE_MS,
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE ?? false,
      allowedHosts: (e.WEBHOOK_ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean),
      connectTimeout: Math.round(e.WEBHOOK_CONNECT_TIMEOUT_SECONDS * 1000),
      responseTimeout: Math.round(e.WEBHOOK_RESPONSE_TIMEOUT_SECONDS * 1000),
    },
  };
}
