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

/**
 * Highest accepted GRAPHQL_(ANONYMOUS_)MAX_TOKENS: a document of N tokens nests up to N lists,
 * and graphql-js's parser, being recursive, overflows the stack from about 1,800 nested lists
 * (Node 20, a cold process); this leaves that much room again for the stack below the parser.
 */
const GRAPHQL_TOKENS_CEILING = 1000;

const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: intFromEnv(0, 65535).default(3000),
  /** Address to listen on; default: hostDefault (loopback while a development account's key may be printed). */
  HOST: z.string().min(1).optional(),
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
  /** GraphQL introspection (`__schema`, `__type`); on by default outside production. */
  GRAPHQL_INTROSPECTION: boolFromEnv.optional(),
  /**
   * Limits of one GraphQL operation with a valid API key (src/graphql/limits.ts); the ANONYMOUS_
   * ones below apply without one and may not exceed these.
   */
  GRAPHQL_MAX_TOKENS: intFromEnv(1, GRAPHQL_TOKENS_CEILING).default(1000),
  GRAPHQL_MAX_DEPTH: intFromEnv(1, 100).default(12),
  GRAPHQL_MAX_ALIASES: intFromEnv(0, 10_000).default(50),
  GRAPHQL_MAX_DIRECTIVES: intFromEnv(0, 10_000).default(50),
  GRAPHQL_MAX_COST: intFromEnv(1, 10_000_000).default(5000),
  /** Largest serialized result, in megabytes. */
  GRAPHQL_MAX_RESPONSE_MB: z.coerce.number().positive().max(1024).default(20),
  GRAPHQL_ANONYMOUS_MAX_TOKENS: intFromEnv(1, GRAPHQL_TOKENS_CEILING).default(500),
  GRAPHQL_ANONYMOUS_MAX_DEPTH: intFromEnv(1, 100).default(6),
  GRAPHQL_ANONYMOUS_MAX_ALIASES: intFromEnv(0, 10_000).default(10),
  GRAPHQL_ANONYMOUS_MAX_DIRECTIVES: intFromEnv(0, 10_000).default(10),
  GRAPHQL_ANONYMOUS_MAX_COST: intFromEnv(1, 10_000_000).default(1000),
  GRAPHQL_ANONYMOUS_MAX_RESPONSE_MB: z.coerce.number().positive().max(1024).default(2),
  /** Seconds SIGTERM waits for in-flight requests before closing anyway. */
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(10),
  /**
   * Create a development account and print its API key on the first start (empty database).
   * Default (devAccountByDefault): on, except in production on an external database
   * (NODE_ENV=production with DATABASE_URL, as docker-compose.yml), where a key in the logs
   * would be a working credential; there only CREATE_DEV_ACCOUNT=true creates it.
   */
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
  /** The CJK face for zh/ja/ko audit logs and values (src/documents/fonts.ts); default: Debian's fonts-wqy-microhei. */
  FONT_CJK_PATH: z.string().min(1).optional(),
  /** The face of a FONT_CJK_PATH collection (a PostScript name); default: its first. */
  FONT_CJK_NAME: z.string().min(1).optional(),
  /** Time allowed for one HTML/DOCX conversion, in seconds. */
  RENDER_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(60),
  /** Conversions run at once per instance. */
  RENDER_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
  /** Largest total a DOCX (ZIP) may inflate to, in megabytes, checked before conversion (zip bombs). */
  DOCX_MAX_UNCOMPRESSED_MB: z.coerce.number().positive().max(4096).default(100),
  /** Most entries a DOCX (ZIP) may hold, checked before conversion. */
  DOCX_MAX_ENTRIES: intFromEnv(1, 65_535).default(2000),
  /** Address space (virtual memory) allowed to each local LibreOffice process, in megabytes; 0: no limit. */
  SOFFICE_MAX_MEMORY_MB: z.coerce.number().int().min(0).max(1_048_576).default(2048),
  /** Largest image value (signature, initials, image, stamp), in megabytes. */
  IMAGE_MAX_MB: z.coerce.number().positive().max(1024).default(10),
  /** Most pixels (width × height) of an image value, in megapixels. */
  IMAGE_MAX_MEGAPIXELS: z.coerce.number().positive().max(1000).default(25),
  /**
   * The parse pool (src/parse-pool/pool.ts; docs/security.md "Parsing off the event loop"): worker
   * threads that parse what callers send, tasks at once beyond which tasks wait, the time and
   * memory (JS heap, and WebAssembly memory) one task may take, and how many tasks may wait.
   */
  PARSE_WORKERS: intFromEnv(1, 64).default(2),
  PARSE_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(20),
  PARSE_MEMORY_MB: intFromEnv(64, 16_384).default(512),
  PARSE_QUEUE_MAX: intFromEnv(0, 10_000).default(20),
  PARSE_NICE: intFromEnv(0, 19).default(5),
  /** Jobs on MongoDB (Agenda's mongo backend) instead of the service's PostgreSQL. */
  JOBS_MONGODB_URL: z.string().min(1).optional(),
  /**
   * Seconds before a job held by an instance that stopped (crash,
   * kill) runs on another (running jobs renew their lock).
   */
  JOBS_LOCK_LIFETIME_SECONDS: z.coerce.number().positive().max(86_400).default(30),
  /**
   * Seconds an Idempotency-Key stays locked after its request's instance stopped renewing it (a
   * crash, kill): a retry with the key runs after this (docs/idempotency.md).
   */
  IDEMPOTENCY_LOCK_SECONDS: z.coerce.number().positive().max(3_600).default(30),
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
  /** Seconds between two scans for reminders that are due (src/submissions/reminders.ts); fractions allowed. */
  REMINDER_SCAN_SECONDS: z.coerce.number().min(0.01).max(3600).default(60),
  /** PKCS#12 file whose certificate signs completed PDFs; unset: one generated once and stored in the database. */
  SIGNING_P12_PATH: z.string().min(1).optional(),
  /** Passphrase of SIGNING_P12_PATH. */
  SIGNING_P12_PASSWORD: z.string().optional(),
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
  /** Webhook deliveries sent at once by one instance (src/webhooks/deliver-webhook.ts). */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(2).max(200).default(60),
  /**
   * Webhook deliveries of one account in progress at once, on all instances together: below
   * WEBHOOK_CONCURRENCY, so that an account with slow receivers never holds all of an instance's.
   */
  WEBHOOK_ACCOUNT_CONCURRENCY: z.coerce.number().int().min(1).max(199).default(30),
  /** Webhook deliveries to one endpoint in progress at once, on all instances together. */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(8),
  /**
   * Comma-separated origins (`https://app.example.com`) allowed to call /api, /graphql and /file from a browser; `*`
   * for any. Unset: none.
   */
  CORS_ORIGINS: z.string().transform(parseOriginList).optional(),
  /**
   * Seconds between checks that the API keys of open subscriptions (WebSocket, SSE) are still valid; a revocation
   * through Signet closes them at once.
   */
  CREDENTIALS_RECHECK_SECONDS: z.coerce.number().positive().max(3600).default(10),
  /**
   * Comma-separated origins (`https://app.example.com`) whose pages may embed the signing form (`/s/…`, `/d/…`) in a
   * frame: its CSP `frame-ancestors`. `*` or unset: any site, as before (docs/embedding.md).
   */
  EMBED_ORIGINS: z.string().transform(parseOriginList).optional(),
  /** New submissions one client address may start through templates' shared links (/d/…) per hour. */
  TEMPLATE_LINK_STARTS_PER_IP: intFromEnv(1, 1_000_000).default(20),
  /** New submissions one template's shared link (/d/…) may start per hour, from all addresses together. */
  TEMPLATE_LINK_STARTS_PER_TEMPLATE: intFromEnv(1, 1_000_000).default(1000),
  /**
   * All the files one signer may upload through the signing form (POST /api/attachments) together, in megabytes;
   * fractions allowed (docs/security.md "Signer uploads").
   */
  SIGNER_UPLOADS_MAX_MB: z.coerce.number().positive().max(102_400).default(100),
  /** Files one signer may upload through the signing form (docs/security.md "Signer uploads"). */
  SIGNER_UPLOADS_MAX_FILES: intFromEnv(1, 1_000_000).default(1000),
  /**
   * Hours after which a signer's upload that no value uses is removed while the form is still open (at once, by the
   * next sweep, once it has closed); fractions allowed.
   */
  SIGNER_UPLOADS_UNUSED_HOURS: z.coerce.number().positive().max(87_600).default(168),
  /** Seconds between two sweeps of signers' unused uploads (src/signing-form/sweep-signer-uploads.ts). */
  SIGNER_UPLOADS_SWEEP_SECONDS: z.coerce.number().min(1).max(86_400).default(3600),
  /**
   * Invitations (signature request emails and SMS) a bulk send releases per minute, unless the bulk send gives its
   * own `rate_per_minute` (src/submissions/bulk-send-job.ts). 1 to 60,000: src/limits.ts BULK_SEND_RATE_PER_MINUTE
   * (this file sits below it and cannot import it).
   */
  BULK_SEND_RATE_PER_MINUTE: intFromEnv(1, 60_000).default(300),
  /**
   * `s3://bucket/prefix`: every file in S3-compatible object storage (src/documents/s3-storage.ts), the bucket
   * checked at start; unset: local disk under DATA_DIR/files (docs/deploy.md "Object storage").
   */
  STORAGE_URL: z.string().transform(parseStorageUrl).optional(),
  /** With STORAGE_URL: file URLs answer with a redirect to a presigned URL of the storage instead of the bytes. */
  FILE_URLS_PRESIGNED: boolFromEnv.optional(),
  /** With FILE_URLS_PRESIGNED: the storage's address as clients reach it, when it differs from AWS_ENDPOINT_URL. */
  STORAGE_PUBLIC_ENDPOINT_URL: z.string().url().optional(),
  /** Time allowed for one storage request (connect and answer), in seconds. */
  STORAGE_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(30),
  /** The S3 endpoint (MinIO, R2, …); unset: AWS S3 in AWS_REGION. */
  AWS_ENDPOINT_URL: z.string().url().optional(),
  /** The bucket's region (us-east-1 by default, which MinIO also uses). */
  AWS_REGION: z.string().min(1).default('us-east-1'),
  /** Credentials; unset: the AWS SDK's default chain (instance or task role, web identity, ~/.aws). */
  AWS_ACCESS_KEY_ID: z.string().min(1).optional(),
  AWS_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  AWS_SESSION_TOKEN: z.string().min(1).optional(),
  /** Path-style addresses (`endpoint/bucket/key`); default: on with AWS_ENDPOINT_URL, off for AWS S3. */
  S3_FORCE_PATH_STYLE: boolFromEnv.optional(),
  /**
   * Connections of each of the service's PostgreSQL pools (Prisma's, and the job store's): with N instances on one
   * database, N × 2 × this (plus a few) must stay under the server's max_connections (docs/operations.md).
   */
  DATABASE_POOL_SIZE: intFromEnv(2, 1000).default(10),
  /** `Authorization: Bearer <this>` required by GET /metrics; unset: /metrics is open (docs/operations.md). */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** OTLP/HTTP endpoint (`http://collector:4318`): traces are sent to `<this>/v1/traces`; unset: no tracing. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** The `service.name` of the traces. */
  OTEL_SERVICE_NAME: z.string().min(1).max(200).default('signet'),
  /** `pretty` (coloured, one line per entry) or `json` (one JSON object per line); default: logFormatDefault. */
  LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
  /**
   * RFC 3161 timestamp authority (http or https) that timestamps every signature and adds a document timestamp
   * (PAdES B-LTA); unset: Signet's own timestamp authority timestamps the signatures (B-LT). docs/signatures.md.
   */
  TSA_URL: z
    .string()
    .url()
    .refine((v) => /^https?:\/\//i.test(v), 'must be an http:// or https:// URL')
    .optional(),
  /** Time allowed for one answer of TSA_URL, in seconds. */
  TSA_TIMEOUT_SECONDS: z.coerce.number().positive().max(120).default(10),
  /** Days before an account's own signing certificate expires from which it is announced (log, GraphQL). */
  SIGNING_CERTIFICATE_WARNING_DAYS: intFromEnv(1, 365).default(30),
});

export type Env = z.infer<typeof EnvSchema>;

/**
 * STORAGE_URL `s3://bucket[/prefix]` → the bucket (S3's naming rules: 3–63 lower-case letters, digits, dots and
 * hyphens, starting and ending with a letter or digit) and the prefix of every key ('' or ending in `/`).
 */
function parseStorageUrl(value: string, ctx: z.RefinementCtx): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/]*)(?:\/(.*))?$/.exec(value);
  const bucket = match?.[1] ?? '';
  const prefix = (match?.[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (!match || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    ctx.addIssue({ code: 'custom', message: 'must be s3://<bucket>[/<prefix>] with a valid bucket name' });
  // Control characters and `.`/`..` segments make keys that S3 clients and consoles do not round-trip.
  else if (
    [...prefix].some((c) => c.charCodeAt(0) < 0x20 || c === '\x7f' || c === '\\') ||
    prefix.split('/').some((s) => s === '.' || s === '..')
  )
    ctx.addIssue({ code: 'custom', message: 'the prefix must not contain control characters, `\\`, `.` or `..`' });
  return { bucket, prefix: prefix ? `${prefix}/` : '' };
}

/**
 * A comma-separated list of origins (CORS_ORIGINS, EMBED_ORIGINS): each as browsers send it (parseOrigin), or `*`;
 * without repeats. An entry that is neither is an issue naming it.
 */
function parseOriginList(value: string, ctx: z.RefinementCtx): string[] {
  const origins: string[] = [];
  for (const entry of value
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean)) {
    const origin = parseOrigin(entry);
    if (origin === undefined)
      ctx.addIssue({
        code: 'custom',
        message: `"${entry}" is not an origin (scheme://host[:port], http or https, no path) or *`,
      });
    else origins.push(origin);
  }
  return [...new Set(origins)];
}

/**
 * A browser origin as browsers send it (`https://app.example.com`, default port left out), `*`, or undefined when
 * `entry` is neither.
 */
function parseOrigin(entry: string): string | undefined {
  if (entry === '*') return '*';
  try {
    const url = new URL(entry);
    if (
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.username ||
      url.password ||
      url.search ||
      url.hash
    )
      return undefined;
    return url.pathname === '/' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

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
  graphql: {
    /** `__schema` and `__type` answered (GRAPHQL_INTROSPECTION). */
    introspection: boolean;
    /** Limits of one operation, with a valid API key and without (docs/security.md "GraphQL limits"). */
    limits: { authenticated: GraphQLLimits; anonymous: GraphQLLimits };
  };
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
  /** FONT_CJK_PATH and FONT_CJK_NAME (src/documents/fonts.ts configureCjkFont). */
  cjkFont: { path: string | undefined; name: string | undefined };
  /** Milliseconds. */
  renderTimeout: number;
  renderConcurrency: number;
  /** Checked before a DOCX is converted (src/rendering/office-document.ts). */
  docxLimits: { maxUncompressedBytes: number; maxEntries: number };
  /** Bytes of address space for each local soffice (`ulimit -v`); undefined: no limit. */
  sofficeMaxMemory: number | undefined;
  /**
   * Image values (signature, initials, image, stamp): checked before they are stored
   * (src/documents/drawable-image.ts).
   */
  images: { maxBytes: number; maxPixels: number };
  /** The parse pool's size and limits (src/parse-pool/pool.ts ParsePoolSettings). */
  parsePool: { workers: number; timeoutMs: number; memoryBytes: number; queueMax: number; nice: number };
  jobsMongodbUrl: string | undefined;
  /** Milliseconds. */
  jobsLockLifetime: number;
  /** Milliseconds (IDEMPOTENCY_LOCK_SECONDS). */
  idempotencyLockLifetime: number;
  mailFrom: string;
  sendgridApiKey: string | undefined;
  sendgridApiUrl: string;
  smtpUrl: string | undefined;
  twilio: { accountSid: string; authToken: string; from: string } | undefined;
  twilioApiUrl: string;
  /** Milliseconds. */
  sendRetryBase: number;
  /** Milliseconds between reminder scans (REMINDER_SCAN_SECONDS). */
  reminderScanInterval: number;
  signingP12Path: string | undefined;
  signingP12Password: string;
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
    /**
     * Deliveries at once: per instance (`instance`, WEBHOOK_CONCURRENCY), and on all instances
     * together per account (`account`) and per endpoint (`endpoint`); docs/security.md "Fair
     * delivery and atomic caps".
     */
    concurrency: { instance: number; account: number; endpoint: number };
  };
  /** Origins allowed cross-origin access (CORS_ORIGINS), as browsers send them; `['*']`: any; empty: none. */
  corsOrigins: string[];
  /** Milliseconds between checks of the API keys behind open subscriptions (CREDENTIALS_RECHECK_SECONDS). */
  credentialsRecheck: number;
  /**
   * Origins whose pages may frame the signing form (EMBED_ORIGINS), as browsers send them; `['*']`: any (the
   * default: no `frame-ancestors`).
   */
  embedOrigins: string[];
  /** Per hour: new submissions through templates' shared links, per client address and per template. */
  templateLinkStarts: { perIp: number; perTemplate: number };
  /**
   * Signing-form uploads (docs/security.md "Signer uploads"): at most `maxBytes` and `maxFiles` per signer
   * (SIGNER_UPLOADS_MAX_MB, SIGNER_UPLOADS_MAX_FILES); the sweep removes those no value uses every `sweepInterval`
   * milliseconds (SIGNER_UPLOADS_SWEEP_SECONDS), in open forms once `unusedAfter` milliseconds old
   * (SIGNER_UPLOADS_UNUSED_HOURS).
   */
  signerUploads: { maxBytes: number; maxFiles: number; unusedAfter: number; sweepInterval: number };
  /** Invitations per minute of a bulk send that gives no `rate_per_minute` (BULK_SEND_RATE_PER_MINUTE). */
  bulkSendRatePerMinute: number;
  /** S3-compatible file storage (STORAGE_URL and the AWS_* variables); undefined: local disk under DATA_DIR/files. */
  storage: S3StorageConfig | undefined;
  /** GET /file/… redirects to a presigned URL of the storage (FILE_URLS_PRESIGNED; S3 only) instead of proxying. */
  fileUrlsPresigned: boolean;
  /** Connections of each PostgreSQL pool of the service (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  /** The Bearer token GET /metrics requires (METRICS_TOKEN); undefined: none required. */
  metricsToken: string | undefined;
  /** OpenTelemetry tracing (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME); undefined: off. */
  tracing: { endpoint: string; serviceName: string } | undefined;
  /** How log lines are written (LOG_FORMAT, else logFormatDefault). */
  logFormat: 'pretty' | 'json';
  /** TSA_URL: the timestamp authority of signatures and document timestamps; undefined: Signet's own. */
  tsaUrl: string | undefined;
  /** Milliseconds. */
  tsaTimeout: number;
  signingCertificateWarningDays: number;
}

/** Where and how files are kept in S3-compatible storage (src/documents/s3-storage.ts). */
export interface S3StorageConfig {
  bucket: string;
  /** Put before every key: '' or ending in `/`. */
  prefix: string;
  /** The S3 API's base URL (AWS_ENDPOINT_URL); undefined: AWS S3 in `region`. */
  endpoint: string | undefined;
  /** The base URL presigned URLs use (STORAGE_PUBLIC_ENDPOINT_URL); undefined: `endpoint`. */
  publicEndpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  /** Undefined: the AWS SDK's default credential chain. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
  /** Milliseconds allowed for one request. */
  timeout: number;
}

/** Limits of one GraphQL operation, checked by src/graphql/limits.ts (GraphQL Armor's units). */
export interface GraphQLLimits {
  /** Lexical tokens of the document (names, punctuation, values). */
  maxTokens: number;
  /** Nesting of fields in an operation (fragments do not count as a level). */
  maxDepth: number;
  /** Aliased fields in an operation, `__typename` included. */
  maxAliases: number;
  /** Directives (`@include`, `@skip`, …) in an operation. */
  maxDirectives: number;
  /** GraphQL Armor's cost: 1 per scalar field, 2 per object field, × 1.5 per level of nesting. */
  maxCost: number;
  /** Bytes of the serialized result (JSON, UTF-8). */
  maxResponseBytes: number;
}

/**
 * Whether the first start creates the development account when CREATE_DEV_ACCOUNT is unset: yes
 * with the embedded database (no DATABASE_URL: one machine, the README quick start, which `npm
 * start` runs with NODE_ENV=production and must still hand out a key offline) and outside
 * production; no for NODE_ENV=production with DATABASE_URL (a deploy such as docker-compose.yml),
 * which must not print a working key into its logs unless asked for.
 */
function devAccountByDefault(e: Pick<Env, 'NODE_ENV' | 'DATABASE_URL'>): boolean {
  return e.NODE_ENV !== 'production' || e.DATABASE_URL === undefined;
}

/**
 * The address to listen on when HOST is unset: loopback (127.0.0.1) when the development account
 * may be created (its key is printed on the first start and works from any machine that reaches
 * the port), every interface otherwise (a deploy behind a load balancer or in a container).
 */
function hostDefault(createDevAccount: boolean): string {
  return createDevAccount ? '127.0.0.1' : '0.0.0.0';
}

/**
 * The log format when LOG_FORMAT is unset: pino-pretty's lines for a person at a terminal
 * (stdout is a TTY) outside production; JSON lines otherwise, for log collectors. `npm start`
 * judges this before it sets NODE_ENV=production (package.json), so a terminal gets pretty lines
 * unless NODE_ENV=production was asked for.
 */
function logFormatDefault(nodeEnv: Env['NODE_ENV'], stdoutIsTty: boolean): 'pretty' | 'json' {
  return stdoutIsTty && nodeEnv !== 'production' ? 'pretty' : 'json';
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
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  stdoutIsTty: boolean = process.stdout.isTTY === true,
): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${detail}`);
  }
  const e = parsed.data;
  if (e.WEBHOOK_ACCOUNT_CONCURRENCY >= e.WEBHOOK_CONCURRENCY)
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_ACCOUNT_CONCURRENCY must be below WEBHOOK_CONCURRENCY ' +
        '(one account never holds all of an instance’s deliveries)',
    );
  const graphqlLimits = graphqlLimitsFromEnv(e);
  const createDevAccount = e.CREATE_DEV_ACCOUNT ?? devAccountByDefault(e);
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST ?? hostDefault(createDevAccount),
    appUrl: (e.APP_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    dataDir: path.resolve(e.DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    embeddedPostgresPort: e.EMBEDDED_POSTGRES_PORT,
    logLevel: e.LOG_LEVEL,
    maxBodySize: Math.floor(e.MAX_BODY_SIZE_MB * 1024 * 1024),
    graphiql: e.GRAPHIQL ?? e.NODE_ENV !== 'production',
    graphql: { introspection: e.GRAPHQL_INTROSPECTION ?? e.NODE_ENV !== 'production', limits: graphqlLimits },
    shutdownTimeout: e.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    createDevAccount,
    secretKeyBase: e.SECRET_KEY_BASE,
    fileUrlTtl: e.FILE_URLS_EXPIRE_MINUTES * 60_000,
    downloadAllowPrivate: e.DOWNLOAD_ALLOW_PRIVATE ?? false,
    downloadMaxBytes: Math.floor(e.DOWNLOAD_MAX_MB * 1024 * 1024),
    downloadTimeout: e.DOWNLOAD_TIMEOUT_SECONDS * 1000,
    gotenbergUrl: e.GOTENBERG_URL?.replace(/\/+$/, ''),
    chromiumPath: e.CHROMIUM_PATH,
    sofficePath: e.SOFFICE_PATH,
    cjkFont: { path: e.FONT_CJK_PATH, name: e.FONT_CJK_NAME },
    renderTimeout: e.RENDER_TIMEOUT_SECONDS * 1000,
    renderConcurrency: e.RENDER_CONCURRENCY,
    docxLimits: {
      maxUncompressedBytes: Math.floor(e.DOCX_MAX_UNCOMPRESSED_MB * 1024 * 1024),
      maxEntries: e.DOCX_MAX_ENTRIES,
    },
    sofficeMaxMemory: e.SOFFICE_MAX_MEMORY_MB === 0 ? undefined : e.SOFFICE_MAX_MEMORY_MB * 1024 * 1024,
    images: {
      maxBytes: Math.floor(e.IMAGE_MAX_MB * 1024 * 1024),
      maxPixels: Math.floor(e.IMAGE_MAX_MEGAPIXELS * 1_000_000),
    },
    parsePool: {
      workers: e.PARSE_WORKERS,
      timeoutMs: Math.round(e.PARSE_TIMEOUT_SECONDS * 1000),
      memoryBytes: e.PARSE_MEMORY_MB * 1024 * 1024,
      queueMax: e.PARSE_QUEUE_MAX,
      nice: e.PARSE_NICE,
    },
    jobsMongodbUrl: e.JOBS_MONGODB_URL,
    jobsLockLifetime: Math.round(e.JOBS_LOCK_LIFETIME_SECONDS * 1000),
    idempotencyLockLifetime: Math.round(e.IDEMPOTENCY_LOCK_SECONDS * 1000),
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
    reminderScanInterval: Math.round(e.REMINDER_SCAN_SECONDS * 1000),
    signingP12Path: e.SIGNING_P12_PATH,
    signingP12Password: e.SIGNING_P12_PASSWORD ?? '',
    redisUrl: e.REDIS_URL,
    webhooks: {
      retryBase: e.WEBHOOK_RETRY_BASE_MS,
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE ?? false,
      allowedHosts: (e.WEBHOOK_ALLOWED_HOSTS ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
      connectTimeout: Math.round(e.WEBHOOK_CONNECT_TIMEOUT_SECONDS * 1000),
      responseTimeout: Math.round(e.WEBHOOK_RESPONSE_TIMEOUT_SECONDS * 1000),
      concurrency: {
        instance: e.WEBHOOK_CONCURRENCY,
        account: e.WEBHOOK_ACCOUNT_CONCURRENCY,
        endpoint: e.WEBHOOK_ENDPOINT_CONCURRENCY,
      },
    },
    corsOrigins: e.CORS_ORIGINS ?? [],
    credentialsRecheck: Math.round(e.CREDENTIALS_RECHECK_SECONDS * 1000),
    // `*` among others is still any origin.
    embedOrigins: !e.EMBED_ORIGINS?.length || e.EMBED_ORIGINS.includes('*') ? ['*'] : e.EMBED_ORIGINS,
    templateLinkStarts: { perIp: e.TEMPLATE_LINK_STARTS_PER_IP, perTemplate: e.TEMPLATE_LINK_STARTS_PER_TEMPLATE },
    signerUploads: {
      maxBytes: Math.floor(e.SIGNER_UPLOADS_MAX_MB * 1024 * 1024),
      maxFiles: e.SIGNER_UPLOADS_MAX_FILES,
      unusedAfter: Math.round(e.SIGNER_UPLOADS_UNUSED_HOURS * 3_600_000),
      sweepInterval: Math.round(e.SIGNER_UPLOADS_SWEEP_SECONDS * 1000),
    },
    bulkSendRatePerMinute: e.BULK_SEND_RATE_PER_MINUTE,
    storage: storageFromEnv(e),
    fileUrlsPresigned: e.FILE_URLS_PRESIGNED ?? false,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    metricsToken: e.METRICS_TOKEN,
    tracing: e.OTEL_EXPORTER_OTLP_ENDPOINT
      ? { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, ''), serviceName: e.OTEL_SERVICE_NAME }
      : undefined,
    logFormat: e.LOG_FORMAT ?? logFormatDefault(e.NODE_ENV, stdoutIsTty),
    tsaUrl: e.TSA_URL,
    tsaTimeout: Math.round(e.TSA_TIMEOUT_SECONDS * 1000),
    signingCertificateWarningDays: e.SIGNING_CERTIFICATE_WARNING_DAYS,
  };
}

/**
 * The S3 storage settings, or undefined without STORAGE_URL.
 * @throws ConfigError for half a key pair, or FILE_URLS_PRESIGNED / STORAGE_PUBLIC_ENDPOINT_URL without STORAGE_URL
 */
function storageFromEnv(e: Env): S3StorageConfig | undefined {
  if (!e.STORAGE_URL) {
    const s3Only = (['FILE_URLS_PRESIGNED', 'STORAGE_PUBLIC_ENDPOINT_URL'] as const).filter((k) => e[k]);
    if (s3Only.length > 0)
      throw new ConfigError(`Invalid configuration: ${s3Only.map((k) => `${k}: needs STORAGE_URL=s3://…`).join('; ')}`);
    return undefined;
  }
  if (Boolean(e.AWS_ACCESS_KEY_ID) !== Boolean(e.AWS_SECRET_ACCESS_KEY))
    throw new ConfigError('Invalid configuration: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither');
  const endpoint = e.AWS_ENDPOINT_URL?.replace(/\/+$/, '');
  return {
    ...e.STORAGE_URL,
    endpoint,
    publicEndpoint: e.STORAGE_PUBLIC_ENDPOINT_URL?.replace(/\/+$/, ''),
    region: e.AWS_REGION,
    forcePathStyle: e.S3_FORCE_PATH_STYLE ?? endpoint !== undefined,
    credentials:
      e.AWS_ACCESS_KEY_ID && e.AWS_SECRET_ACCESS_KEY
        ? {
            accessKeyId: e.AWS_ACCESS_KEY_ID,
            secretAccessKey: e.AWS_SECRET_ACCESS_KEY,
            ...(e.AWS_SESSION_TOKEN ? { sessionToken: e.AWS_SESSION_TOKEN } : {}),
          }
        : undefined,
    timeout: Math.round(e.STORAGE_TIMEOUT_SECONDS * 1000),
  };
}

/**
 * The GraphQL limits of both tiers from GRAPHQL_MAX_* and GRAPHQL_ANONYMOUS_MAX_*.
 * @throws ConfigError when an anonymous limit exceeds its authenticated one (anonymous callers
 *   get tighter limits: issue 12 §1, DESIGN.md "limits")
 */
function graphqlLimitsFromEnv(e: Env): Config['graphql']['limits'] {
  const tier = (prefix: 'GRAPHQL_' | 'GRAPHQL_ANONYMOUS_'): GraphQLLimits => ({
    maxTokens: e[`${prefix}MAX_TOKENS`],
    maxDepth: e[`${prefix}MAX_DEPTH`],
    maxAliases: e[`${prefix}MAX_ALIASES`],
    maxDirectives: e[`${prefix}MAX_DIRECTIVES`],
    maxCost: e[`${prefix}MAX_COST`],
    maxResponseBytes: Math.floor(e[`${prefix}MAX_RESPONSE_MB`] * 1024 * 1024),
  });
  const authenticated = tier('GRAPHQL_');
  const anonymous = tier('GRAPHQL_ANONYMOUS_');
  const names: Record<keyof GraphQLLimits, string> = {
    maxTokens: 'MAX_TOKENS',
    maxDepth: 'MAX_DEPTH',
    maxAliases: 'MAX_ALIASES',
    maxDirectives: 'MAX_DIRECTIVES',
    maxCost: 'MAX_COST',
    maxResponseBytes: 'MAX_RESPONSE_MB',
  };
  const over = (Object.keys(names) as (keyof GraphQLLimits)[])
    .filter((key) => anonymous[key] > authenticated[key])
    .map((key) => `GRAPHQL_ANONYMOUS_${names[key]}: must not exceed GRAPHQL_${names[key]}`);
  if (over.length > 0) throw new ConfigError(`Invalid configuration: ${over.join('; ')}`);
  return { authenticated, anonymous };
}
