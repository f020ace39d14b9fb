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
  };
}
