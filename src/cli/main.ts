/**
 * The `signet` CLI, on the same configuration as the service (embedded PostgreSQL under
 * DATA_DIR, or DATABASE_URL). Results go to stdout as exactly one JSON line; diagnostics to
 * stderr. Exit codes: 0 success, 2 bad arguments or rejected input (usage or message on
 * stderr, nothing written), 1 unexpected failure.
 */
import { parseArgs } from 'node:util';
import type { FastifyBaseLogger } from 'fastify';
import { createApiKey, listApiKeys, revokeApiKey } from '../accounts/api-keys.ts';
import { createAccount } from '../accounts/create-account.ts';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { createDb, type Db } from '../db/client.ts';
import { openDatabase } from '../db/database.ts';
import { applyMigrations } from '../db/migrate.ts';
import { isAppError } from '../errors.ts';
import { createWebhookEndpoint, listWebhookEndpoints, removeWebhookEndpoint } from '../webhooks/endpoints.ts';

export const USAGE = `Usage: signet <command> [options]

Commands:
  account create --name NAME --email EMAIL [--first-name F] [--last-name L]
      Creates an account, its first user and an API key.
      Prints {"accountId":1,"userId":1,"apiKey":"..."}
  api-key create --user-id N [--name LABEL]
      Creates an API key for a user. Prints {"id":..,"accountId":..,"userId":..,"name":"..","apiKey":"..."}
  api-key revoke --key-id N
      Revokes an API key. Prints {"id":..,"revokedAt":"..."}. Requests with it get 401 at once; the
      service's WebSockets and SSE streams opened with it close at once with REDIS_URL set,
      otherwise within CREDENTIALS_RECHECK_SECONDS.
  api-key list --account-id N
      Prints the account's keys (never the tokens) as a JSON array.
  webhook add --account-id N --url URL [--events form.completed,...] [--header-name NAME --header-value VALUE]
      Adds a webhook endpoint (default events: form.viewed, form.started, form.completed, form.declined).
      Prints {"id":..,"url":"..","events":[..],"secret":"whsec_..."}; the secret is shown only this once.
  webhook list --account-id N
      Prints the account's webhook endpoints (never the secrets) as a JSON array.
  webhook remove --id N
      Removes a webhook endpoint and its deliveries. Prints {"id":..}.
  migrate
      Applies pending database migrations. Prints {"applied":[...]}.

Configuration comes from the environment as for the service (DATABASE_URL, DATA_DIR, ...).`;

/** Bad command line: usage on stderr, exit code 2. */
class UsageError extends Error {}

type Flags = Record<string, string | boolean | undefined>;

interface Command {
  options: Record<string, { type: 'string' }>;
  required: string[];
  run(db: Db, flags: Flags, config: Config): Promise<unknown>;
}

const COMMANDS: Record<string, Command> = {
  'account create': {
    options: { name: { type: 'string' }, email: { type: 'string' }, 'first-name': { type: 'string' }, 'last-name': { type: 'string' } },
    required: ['name', 'email'],
    async run(db, flags) {
      const created = await createAccount(db, {
        name: String(flags.name),
        email: String(flags.email),
        firstName: flags['first-name'] as string | undefined,
        lastName: flags['last-name'] as string | undefined,
      });
      return { accountId: created.accountId, userId: created.userId, apiKey: created.apiKey };
    },
  },
  'api-key create': {
    options: { 'user-id': { type: 'string' }, name: { type: 'string' } },
    required: ['user-id'],
    async run(db, flags) {
      const { apiKey, token } = await createApiKey(db, { userId: positiveInt(flags, 'user-id'), name: flags.name as string | undefined });
      return { id: apiKey.id, accountId: apiKey.accountId, userId: apiKey.userId, name: apiKey.name, apiKey: token };
    },
  },
  'api-key revoke': {
    options: { 'key-id': { type: 'string' } },
    required: ['key-id'],
    async run(db, flags, config) {
      // With Redis the running instances hear of it at once (as from the API); without, at their
      // next check. Loaded only then: the live-events module brings graphql-yoga, slow to load.
      const live = config.redisUrl ? await connectLiveEvents(db, config, config.redisUrl) : undefined;
      try {
        const key = await revokeApiKey(db, { keyId: positiveInt(flags, 'key-id'), live });
        return { id: key.id, revokedAt: key.revokedAt };
      } finally {
        await live?.close();
      }
    },
  },
  'webhook add': {
    options: { 'account-id': { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, 'header-name': { type: 'string' }, 'header-value': { type: 'string' } },
    required: ['account-id', 'url'],
    async run(db, flags) {
      const events = flags.events === undefined ? undefined : String(flags.events).split(',').map((e) => e.trim()).filter(Boolean);
      const { endpoint, secret } = await createWebhookEndpoint(db, {
        accountId: positiveInt(flags, 'account-id'),
        url: String(flags.url),
        events,
        headerName: flags['header-name'] as string | undefined,
        headerValue: flags['header-value'] as string | undefined,
      });
      return { id: endpoint.id, url: endpoint.url, events: endpoint.events, secret };
    },
  },
  'webhook list': {
    options: { 'account-id': { type: 'string' } },
    required: ['account-id'],
    async run(db, flags) {
      const endpoints = await listWebhookEndpoints(db, { accountId: positiveInt(flags, 'account-id') });
      return endpoints.map((e) => ({
        id: e.id,
        accountId: e.accountId,
        url: e.url,
        events: e.events,
        headerName: e.headerName,
        enabled: e.disabledAt === null,
        createdAt: e.createdAt,
      }));
    },
  },
  'webhook remove': {
    options: { id: { type: 'string' } },
    required: ['id'],
    async run(db, flags) {
      return removeWebhookEndpoint(db, { id: positiveInt(flags, 'id') });
    },
  },
  'api-key list': {
    options: { 'account-id': { type: 'string' } },
    required: ['account-id'],
    async run(db, flags) {
      return listApiKeys(db, { accountId: positiveInt(flags, 'account-id') });
    },
  },
};

/** The live-event transport through Redis, to announce a revocation to the running instances. */
async function connectLiveEvents(db: Db, config: Config, redisUrl: string) {
  const [{ default: pino }, { resolveSecretKeyBase }, { createLiveEvents }] = await Promise.all([
    import('pino'),
    import('../documents/secret-key.ts'),
    import('../events/pubsub.ts'),
  ]);
  const logger = pino({ level: 'warn' }, pino.destination(2)) as unknown as FastifyBaseLogger;
  return createLiveEvents({ db, logger, redis: { url: redisUrl, secretKeyBase: await resolveSecretKeyBase(config) } });
}

function positiveInt(flags: Flags, name: string): number {
  const raw = String(flags[name]);
  if (!/^[1-9]\d{0,9}$/.test(raw) || Number(raw) > 2_147_483_647) throw new UsageError(`--${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/**
 * Runs the CLI.
 * @param argv arguments after the program name
 * @returns the exit code
 */
export async function runCli(argv: string[], io: { out: (line: string) => void; err: (line: string) => void }): Promise<number> {
  const [first, second, ...rest] = argv;
  if (!first || first === 'help' || first === '--help' || first === '-h') {
    (first ? io.out : io.err)(USAGE);
    return first ? 0 : 2;
  }

  let run: (db: Db, config: Config) => Promise<unknown>;
  let migrateOnly = false;
  try {
    if (first === 'migrate') {
      if (second !== undefined) throw new UsageError(`migrate takes no arguments, got "${[second, ...rest].join(' ')}"`);
      migrateOnly = true;
      run = async () => undefined;
    } else {
      const command = COMMANDS[`${first} ${second ?? ''}`];
      if (!command) throw new UsageError(`Unknown command "${[first, second].filter(Boolean).join(' ')}"`);
      const { values, positionals } = parseArgs({ args: rest, options: command.options, allowPositionals: true, strict: true });
      if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}"`);
      const missing = command.required.filter((name) => values[name] === undefined || values[name] === '');
      if (missing.length > 0) throw new UsageError(`Missing ${missing.map((m) => `--${m}`).join(', ')}`);
      // Validate numeric flags before touching the database.
      for (const name of Object.keys(command.options)) if ((name === 'id' || name.endsWith('-id')) && values[name] !== undefined) positiveInt(values, name);
      run = (db, config) => command.run(db, values, config);
    }
  } catch (error) {
    const message = error instanceof UsageError ? error.message : (error as Error).message;
    io.err(`signet: ${message}\n\n${USAGE}`);
    return 2;
  }

  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`signet: ${error.message}`);
      return 2;
    }
    throw error;
  }

  const database = await openDatabase(config);
  const db = createDb(database.url, { poolSize: 2 });
  try {
    const { applied } = await applyMigrations({
      connectionString: database.url,
      log: migrateOnly ? (line) => io.err(line) : () => {},
    });
    if (migrateOnly) {
      io.out(JSON.stringify({ applied }));
      return 0;
    }
    io.out(JSON.stringify(await run(db, config)));
    return 0;
  } catch (error) {
    if (isAppError(error)) {
      io.err(`signet: ${error.message}`);
      return 2;
    }
    io.err(`signet: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 1;
  } finally {
    await db.$disconnect().catch(() => undefined);
    await database.close();
  }
}

const isEntry = process.argv[1] && /(?:signet(?:\.mjs)?|cli[\\/]main\.ts)$/.test(process.argv[1]);
if (isEntry) {
  runCli(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      process.stderr.write(`signet: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
