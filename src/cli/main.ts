/**
 * The `signet` CLI, on the same configuration as the service (embedded PostgreSQL under
 * DATA_DIR, or DATABASE_URL). Results go to stdout as exactly one JSON line; diagnostics to
 * stderr. Exit codes: 0 success, 2 bad arguments or rejected input (usage or message on
 * stderr, nothing written), 1 unexpected failure. `signet <command> --help` (or `-h`, or
 * `signet help <command>`; a group such as `api-key` lists its commands) prints that usage on
 * stdout and exits 0 without opening the database. Arguments are parsed by node:util parseArgs.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  AccountPreferencesChange,
  accountReminders,
  parseAccountPreferences,
  updateAccountPreferences,
} from '../accounts/account-preferences.ts';
import { type ApiKeySummary, listApiKeys, parseInput, revokeApiKey } from '../accounts/api-keys.ts';
import type { ApiKeyScope } from '../accounts/key-scopes.ts';
import { createAccount } from '../accounts/create-account.ts';
import { listAccounts, listUsers } from '../accounts/list-accounts.ts';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { closeParsePool, configureParsePool } from '../parse-pool/pool.ts';
import { createDb, type Db } from '../db/client.ts';
import { openDatabase } from '../db/database.ts';
import { applyMigrations } from '../db/migrate.ts';
import { AppError, isAppError } from '../errors.ts';
import { accountDefaultLanguage } from '../i18n/signer-language.ts';
import { accountConsentTexts } from '../accounts/consent-texts.ts';
import { folderFullNames } from '../templates/folders.ts';
import { createApiKeyInFolders } from '../templates/key-folders.ts';
import {
  createWebhookEndpoint,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  webhookDestinationCheck,
} from '../webhooks/endpoints.ts';

/** Bad command line: usage on stderr, exit code 2. */
class UsageError extends Error {}

type Flags = Record<string, string | boolean | string[] | undefined>;

interface Command {
  /** The command line after `signet`, options included (`api-key create --user-id N [--name LABEL]`). */
  synopsis: string;
  /** What it does and prints, one or more lines. */
  description: string;
  /** `multiple`: the option may be given several times (its value is then a list). */
  options: Record<string, { type: 'string'; multiple?: true }>;
  required: string[];
  /** Only applies migrations (they are applied before every other command too). */
  migrateOnly?: true;
  run(db: Db, flags: Flags, config: Config): Promise<unknown>;
}

/** The commands by name (`<group> <action>`, or one word), in the order the usage lists them. */
const COMMANDS: Record<string, Command> = {
  'account create': {
    synopsis: 'account create --name NAME --email EMAIL [--first-name F] [--last-name L]',
    description:
      'Creates an account, its first user and an API key.\n' +
      'Prints {"accountId":1,"userId":1,"apiKey":"..."}; the key is shown only this once.',
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
    },
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
  'account list': {
    synopsis: 'account list',
    description:
      'Prints every account (archived ones too) as a JSON array:\n' +
      '[{"id":1,"name":"..","testing":false,"createdAt":"..","archivedAt":null,"userCount":1}, ...]',
    options: {},
    required: [],
    async run(db) {
      return listAccounts(db);
    },
  },
  'account settings': {
    synopsis:
      'account settings --account-id N [--combine-pdf-result true|false] [--reminders JSON] ' +
      '[--default-language CODE] [--consent-text TEXT|JSON]',
    description:
      "Sets the account's settings given (the others are kept), then prints them:\n" +
      '{"accountId":1,"combinePdfResult":false,"reminders":null,"defaultLanguage":null,"consentText":null}.\n' +
      '--combine-pdf-result: completion also makes one signed PDF of the final documents and the audit log\n' +
      '(combined_document_url; DocuSeal "combine PDF result").\n' +
      "--reminders: the default reminders of submissions without their own, as JSON in the API's keys\n" +
      '(\'{"first_after_hours":24,"every_hours":48,"max_count":3}\'; \'{"max_count":0}\': none; docs/reminders.md).\n' +
      '--default-language: the language of signers for whom nothing else names one (de, ar, …; "" removes it:\n' +
      'the signer\'s browser decides; docs/signing-form.md "Languages").\n' +
      "--consent-text: the account's own electronic-signature disclosure, shown to signers before they sign\n" +
      '(paragraphs split by a blank line): a text for every language, or a JSON object per language\n' +
      '(\'{"de":"…","default":"…"}\'); "" removes it (Signet\'s text; docs/signing-form.md "Consent").',
    options: {
      'account-id': { type: 'string' },
      'combine-pdf-result': { type: 'string' },
      reminders: { type: 'string' },
      'default-language': { type: 'string' },
      'consent-text': { type: 'string' },
    },
    required: ['account-id'],
    async run(db, flags) {
      const accountId = positiveInt(flags, 'account-id');
      const combine = flags['combine-pdf-result'];
      if (combine !== undefined && combine !== 'true' && combine !== 'false')
        throw new AppError('VALIDATION', `--combine-pdf-result must be true or false, got "${String(combine)}"`);
      const change = parseInput(AccountPreferencesChange, {
        ...(combine !== undefined ? { combine_pdf_result: combine === 'true' } : {}),
        ...(flags.reminders !== undefined ? { reminders: jsonFlag(flags, 'reminders') } : {}),
        ...(flags['default-language'] !== undefined ? { default_language: String(flags['default-language']) } : {}),
        ...(flags['consent-text'] !== undefined ? { signing_consent_text: consentTextFlag(flags) } : {}),
      });
      const account = await db.account.findUnique({ where: { id: accountId }, select: { preferences: true } });
      if (!account) throw new AppError('NOT_FOUND', `Account ${accountId} not found`);
      const preferences =
        Object.keys(change).length === 0
          ? parseAccountPreferences(account.preferences)
          : await updateAccountPreferences(db, { accountId, change });
      return {
        accountId,
        combinePdfResult: preferences.combine_pdf_result === true,
        reminders: accountReminders(preferences),
        defaultLanguage: accountDefaultLanguage(preferences) ?? null,
        consentText: accountConsentTexts(preferences),
      };
    },
  },
  'user list': {
    synopsis: 'user list [--account-id N]',
    description:
      "Prints every user (archived ones too), or the account's, as a JSON array (never a key):\n" +
      '[{"id":1,"accountId":1,"email":"..","firstName":"..","lastName":"..","role":"admin",' +
      '"createdAt":"..","archivedAt":null}, ...]\n' +
      'A lost key is replaced with `signet api-key create --user-id <id>`.',
    options: { 'account-id': { type: 'string' } },
    required: [],
    async run(db, flags) {
      return listUsers(db, {
        accountId: flags['account-id'] === undefined ? undefined : positiveInt(flags, 'account-id'),
      });
    },
  },
  'api-key create': {
    synopsis: 'api-key create --user-id N [--name LABEL] [--scope read|write]... [--folders FOLDER]...',
    description:
      'Creates an API key for a user (`signet user list` shows the ids).\n' +
      '--scope read: queries and subscriptions only (REST GET); write: everything (a write key also reads);\n' +
      'repeat it or separate with commas (--scope read,write); default both.\n' +
      '--folders "Sales": only templates in that folder and its subfolders, and their submissions; repeat it\n' +
      'for more folders (one full name each, "Clients / 2026"; made when missing); default every folder.\n' +
      'Prints {"id":..,"accountId":..,"userId":..,"name":"..","scopes":[..],"folders":[..],"apiKey":"..."};\n' +
      'the key is shown only this once.',
    options: {
      'user-id': { type: 'string' },
      name: { type: 'string' },
      scope: { type: 'string', multiple: true },
      folders: { type: 'string', multiple: true },
    },
    required: ['user-id'],
    async run(db, flags) {
      const scopes = ((flags.scope ?? []) as string[]).flatMap((value) =>
        value
          .split(',')
          .map((scope) => scope.trim())
          .filter(Boolean),
      );
      const { apiKey, token } = await createApiKeyInFolders(db, {
        userId: positiveInt(flags, 'user-id'),
        name: flags.name as string | undefined,
        scopes: flags.scope === undefined ? undefined : (scopes as ApiKeyScope[]),
        folders: flags.folders as string[] | undefined,
      });
      const [shown] = await withFolderNames(db, [apiKey]);
      return {
        id: apiKey.id,
        accountId: apiKey.accountId,
        userId: apiKey.userId,
        name: apiKey.name,
        scopes: shown!.scopes,
        folders: shown!.folders,
        apiKey: token,
      };
    },
  },
  'api-key revoke': {
    synopsis: 'api-key revoke --key-id N',
    description:
      'Revokes an API key. Prints {"id":..,"revokedAt":"..."}. Requests with it get 401 at once, and the\n' +
      "running instances' WebSockets and SSE streams opened with it close within a second (PostgreSQL tells them).",
    options: { 'key-id': { type: 'string' } },
    required: ['key-id'],
    async run(db, flags) {
      const key = await revokeApiKey(db, { keyId: positiveInt(flags, 'key-id') });
      return { id: key.id, revokedAt: key.revokedAt };
    },
  },
  'api-key list': {
    synopsis: 'api-key list --account-id N',
    description:
      "Prints the account's keys (never the tokens) as a JSON array, each with its scopes and the full names of\n" +
      'the folders it is limited to ([]: every folder).',
    options: { 'account-id': { type: 'string' } },
    required: ['account-id'],
    async run(db, flags) {
      return withFolderNames(db, await listApiKeys(db, { accountId: positiveInt(flags, 'account-id') }));
    },
  },
  'webhook add': {
    synopsis:
      'webhook add --account-id N --url URL [--events form.completed,...] [--header-name NAME --header-value VALUE]',
    description:
      'Adds a webhook endpoint (default events: form.viewed, form.started, form.completed, form.declined).\n' +
      "The URL's host must resolve to public addresses (or be allowed by WEBHOOK_ALLOWED_HOSTS or\n" +
      'WEBHOOK_ALLOW_PRIVATE), as for every delivery.\n' +
      'Prints {"id":..,"url":"..","events":[..],"secret":"whsec_..."}; the secret is shown only this once.',
    options: {
      'account-id': { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      'header-name': { type: 'string' },
      'header-value': { type: 'string' },
    },
    required: ['account-id', 'url'],
    async run(db, flags, config) {
      const events =
        flags.events === undefined
          ? undefined
          : String(flags.events)
              .split(',')
              .map((e) => e.trim())
              .filter(Boolean);
      const { endpoint, secret } = await createWebhookEndpoint(db, {
        accountId: positiveInt(flags, 'account-id'),
        url: String(flags.url),
        events,
        headerName: flags['header-name'] as string | undefined,
        headerValue: flags['header-value'] as string | undefined,
        destination: webhookDestinationCheck(config),
      });
      return { id: endpoint.id, url: endpoint.url, events: endpoint.events, secret };
    },
  },
  'webhook list': {
    synopsis: 'webhook list --account-id N',
    description: "Prints the account's webhook endpoints (never the secrets) as a JSON array.",
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
    synopsis: 'webhook remove --id N',
    description: 'Removes a webhook endpoint and its deliveries. Prints {"id":..}.',
    options: { id: { type: 'string' } },
    required: ['id'],
    async run(db, flags) {
      return removeWebhookEndpoint(db, { id: positiveInt(flags, 'id') });
    },
  },
  'storage migrate': {
    synopsis: 'storage migrate --to s3|local',
    description:
      'Copies the stored files from DATA_DIR/files to the S3 storage of STORAGE_URL (--to s3), or back\n' +
      '(--to local), under the same keys; files already there are skipped, so a stopped run resumes when run\n' +
      'again. Nothing is deleted. Prints {"from":"local","to":"s3","files":N,"copied":N,"skipped":N,\n' +
      '"missing":N,"damaged":N,"bytes":N,"missingKeys":[..]} (docs/deploy.md).',
    options: { to: { type: 'string' } },
    required: ['to'],
    async run(db, flags, config) {
      const to = flags.to;
      if (to !== 's3' && to !== 'local')
        throw new AppError('VALIDATION', `--to must be s3 or local, got "${String(to)}"`);
      if (!config.storage) throw new AppError('VALIDATION', 'storage migrate needs STORAGE_URL=s3://bucket/prefix');
      const [{ createLocalStorage }, { openS3Storage }, { migrateStorage }] = await Promise.all([
        import('../documents/storage.ts'),
        import('../documents/s3-storage.ts'),
        import('../documents/migrate-storage.ts'),
      ]);
      const local = createLocalStorage(path.join(config.dataDir, 'files'));
      const s3 = await openS3Storage(config.storage);
      try {
        return await migrateStorage(
          { db, source: to === 's3' ? local : s3, target: to === 's3' ? s3 : local },
          { from: to === 's3' ? 'local' : 's3', to },
        );
      } finally {
        s3.close();
      }
    },
  },
  'certificate upload': {
    synopsis:
      'certificate upload --account-id N --file BUNDLE.p12 [--password-file FILE | --password PASSWORD] [--name LABEL]',
    description:
      "Stores a PKCS#12 (key and certificate) as the account's own signing certificate, sealed with\n" +
      "SECRET_KEY_BASE; it signs the account's documents from the next completion on (docs/signatures.md).\n" +
      'The password comes from --password-file (its first line) or --password (visible to other users of the\n' +
      'machine in the process list). Refused (exit 2) when it does not open, has expired or cannot sign.\n' +
      'Prints {"id":..,"name":"..","subject":"..","notAfter":"..","expiryWarning":null,...}.',
    options: {
      'account-id': { type: 'string' },
      file: { type: 'string' },
      'password-file': { type: 'string' },
      password: { type: 'string' },
      name: { type: 'string' },
    },
    required: ['account-id', 'file'],
    async run(db, flags, config) {
      const fs = await import('node:fs/promises');
      const read = async (option: string) => {
        try {
          return await fs.readFile(String(flags[option]));
        } catch (error) {
          throw new AppError(
            'VALIDATION',
            `--${option}: cannot read ${String(flags[option])}: ${(error as Error).message}`,
          );
        }
      };
      const password =
        flags['password-file'] !== undefined
          ? (await read('password-file')).toString('utf8').split(/\r?\n/)[0]!
          : ((flags.password as string | undefined) ?? '');
      const accountId = positiveInt(flags, 'account-id');
      if (!(await db.account.findUnique({ where: { id: accountId }, select: { id: true } })))
        throw new AppError('NOT_FOUND', `Account ${accountId} not found`);
      const { uploadSigningCertificate } = await import('../signing/account-certificates.ts');
      return uploadSigningCertificate(
        { db, config },
        {
          accountId,
          request: { file: (await read('file')).toString('base64'), password, name: flags.name as string | undefined },
        },
      );
    },
  },
  'certificate list': {
    synopsis: 'certificate list --account-id N',
    description:
      "Prints the account's own signing certificates (never a key or password) as a JSON array, newest first,\n" +
      'each with inUse and expiryWarning (set from SIGNING_CERTIFICATE_WARNING_DAYS before it expires).',
    options: { 'account-id': { type: 'string' } },
    required: ['account-id'],
    async run(db, flags, config) {
      const { listSigningCertificates } = await import('../signing/account-certificates.ts');
      return listSigningCertificates({ db, config }, { accountId: positiveInt(flags, 'account-id') });
    },
  },
  'certificate revoke': {
    synopsis: 'certificate revoke --account-id N --id N',
    description:
      "Revokes one of the account's certificates: it signs nothing more (the newest other valid one, else the\n" +
      "service's, signs instead). Prints the certificate.",
    options: { 'account-id': { type: 'string' }, id: { type: 'string' } },
    required: ['account-id', 'id'],
    async run(db, flags, config) {
      const { revokeSigningCertificate } = await import('../signing/account-certificates.ts');
      return revokeSigningCertificate(
        { db, config },
        { accountId: positiveInt(flags, 'account-id'), id: positiveInt(flags, 'id') },
      );
    },
  },
  migrate: {
    synopsis: 'migrate',
    description: 'Applies pending database migrations. Prints {"applied":[...]}.',
    options: {},
    required: [],
    migrateOnly: true,
    async run() {
      return undefined;
    },
  },
};

const CONFIGURATION_NOTE = 'Configuration comes from the environment as for the service (DATABASE_URL, DATA_DIR, ...).';

function describeCommand(command: Command): string {
  return `  ${command.synopsis}\n${command.description.replace(/^/gm, '      ')}`;
}

export const USAGE = `Usage: signet <command> [options]

Commands:
${Object.values(COMMANDS).map(describeCommand).join('\n')}

signet <command> --help (or -h, or signet help <command>) prints one command's usage.
${CONFIGURATION_NOTE}`;

/** The usage of the commands named by `words` (`api-key create`, or a group: `api-key`), or undefined for none. */
function usageOf(words: string[]): string | undefined {
  const name = words.join(' ');
  const matching = Object.entries(COMMANDS).filter(
    ([key]) => key === name || (words.length === 1 && key.startsWith(`${name} `)),
  );
  if (matching.length === 0) return undefined;
  if (matching.length === 1) {
    const [, command] = matching[0]!;
    return `Usage: signet ${command.synopsis}\n\n${command.description.replace(/^/gm, '  ')}\n\n${CONFIGURATION_NOTE}`;
  }
  const head = `Usage: signet ${name} <${matching.map(([key]) => key.split(' ')[1]).join('|')}> [options]`;
  return `${head}\n\n${matching.map(([, command]) => describeCommand(command)).join('\n')}\n\n${CONFIGURATION_NOTE}`;
}

const isHelpFlag = (arg: string | undefined) => arg === '--help' || arg === '-h';

function positiveInt(flags: Flags, name: string): number {
  const raw = String(flags[name]);
  if (!/^[1-9]\d{0,9}$/.test(raw) || Number(raw) > 2_147_483_647)
    throw new UsageError(`--${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/** Keys as the CLI prints them: `folderIds` replaced by the folders' full names (`folders`). */
async function withFolderNames(db: Db, keys: ApiKeySummary[]) {
  const names = await folderFullNames(db, [...new Set(keys.flatMap((key) => key.folderIds))]);
  return keys.map(({ folderIds, ...key }) => ({ ...key, folders: folderIds.map((id) => names.get(id) ?? '') }));
}

/**
 * A flag whose value is JSON (`--reminders '{"max_count":0}'`).
 * @throws AppError VALIDATION (exit code 2) when it does not parse
 */
function jsonFlag(flags: Flags, name: string): unknown {
  try {
    return JSON.parse(String(flags[name]));
  } catch {
    throw new AppError('VALIDATION', `--${name} must be JSON, got "${String(flags[name])}"`);
  }
}

/**
 * `--consent-text`: a JSON object (one text per language) when it begins with `{`, else the text
 * itself, for every language.
 * @throws AppError VALIDATION (exit code 2) when it begins with `{` and does not parse
 */
function consentTextFlag(flags: Flags): unknown {
  const value = String(flags['consent-text']);
  return value.trimStart().startsWith('{') ? jsonFlag(flags, 'consent-text') : value;
}

/**
 * Runs the CLI.
 * @param argv arguments after the program name
 * @returns the exit code
 */
export async function runCli(
  argv: string[],
  io: { out: (line: string) => void; err: (line: string) => void },
): Promise<number> {
  const [first, second, ...rest] = argv;
  if (!first || first === 'help' || isHelpFlag(first)) {
    if (!first) {
      io.err(USAGE);
      return 2;
    }
    // `signet help`, `signet --help`, `signet help api-key [create]`.
    const topic = first === 'help' ? argv.slice(1) : [];
    if (topic.length === 0) {
      io.out(USAGE);
      return 0;
    }
    const usage = usageOf(topic);
    if (usage) {
      io.out(usage);
      return 0;
    }
    io.err(`signet: Unknown command "${topic.join(' ')}"\n\n${USAGE}`);
    return 2;
  }

  let run: (db: Db, config: Config) => Promise<unknown>;
  let migrateOnly = false;
  try {
    // `signet api-key --help`, `signet api-key`: the group's commands.
    if (!COMMANDS[first] && (second === undefined || isHelpFlag(second))) {
      const usage = usageOf([first]);
      if (usage && second !== undefined) {
        io.out(usage);
        return 0;
      }
      if (usage) {
        io.err(`signet: "${first}" needs a command\n\n${usage}`);
        return 2;
      }
    }
    const name = COMMANDS[first] ? first : `${first} ${second ?? ''}`;
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`Unknown command "${[first, second].filter(Boolean).join(' ')}"`);
    const args = COMMANDS[first] ? argv.slice(1) : rest;
    if (args.some(isHelpFlag)) {
      io.out(usageOf(name.split(' '))!);
      return 0;
    }
    const { values, positionals } = parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
    if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}"`);
    const missing = command.required.filter((option) => values[option] === undefined || values[option] === '');
    if (missing.length > 0) throw new UsageError(`Missing ${missing.map((m) => `--${m}`).join(', ')}`);
    // Validate numeric flags before touching the database.
    for (const option of Object.keys(command.options))
      if ((option === 'id' || option.endsWith('-id')) && values[option] !== undefined) positiveInt(values, option);
    migrateOnly = command.migrateOnly === true;
    run = (db, config) => command.run(db, values, config);
  } catch (error) {
    const message = error instanceof UsageError ? error.message : (error as Error).message;
    const known = COMMANDS[first] ? [first] : [first, second ?? ''];
    io.err(`signet: ${message}\n\n${usageOf(known) ?? usageOf([first]) ?? USAGE}`);
    return 2;
  }

  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`signet: ${error.message}`);
      return 2;
    }
    throw error;
  }

  configureParsePool(config.parsePool);
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
    await closeParsePool();
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
