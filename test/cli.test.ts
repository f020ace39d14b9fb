/**
 * The `signet` CLI run as a real process against a test database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db } from '../src/db/client.ts';
import { MIGRATIONS_DIR } from '../src/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { ROOT, runSignet, startService, type ServiceProcess } from './helpers/processes.ts';

let database: TestDatabase;
let db: Db;
let service: ServiceProcess;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
  db = createDb(database.url, { poolSize: 2 });
  env = { DATABASE_URL: database.url };
});
afterAll(async () => {
  await service?.stop();
  await db?.$disconnect();
  await database?.drop();
});

function jsonLine(stdout: string): any {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

describe('signet migrate', () => {
  it('applies pending migrations and says which, then nothing', async () => {
    const first = await runSignet(['migrate'], env);
    expect(first.code).toBe(0);
    const all = fs
      .readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(all[0]).toBe('20261121000000_init');
    expect(jsonLine(first.stdout)).toEqual({ applied: all });
    const second = await runSignet(['migrate'], env);
    expect(second.code).toBe(0);
    expect(jsonLine(second.stdout)).toEqual({ applied: [] });
  });
});

describe('signet account create', () => {
  it('prints exactly one JSON line with accountId, userId and apiKey, and the key works', async () => {
    const result = await runSignet(
      [
        'account',
        'create',
        '--name',
        'Acme',
        '--email',
        'Owner@Acme.test',
        '--first-name',
        'Olive',
        '--last-name',
        'Owner',
      ],
      env,
    );
    expect(result.code).toBe(0);
    const created = jsonLine(result.stdout);
    expect(Object.keys(created)).toEqual(['accountId', 'userId', 'apiKey']);
    expect(created).toEqual({
      accountId: expect.any(Number),
      userId: expect.any(Number),
      apiKey: expect.stringMatching(/^sgt_[A-Za-z0-9_-]{43}$/),
    });

    const user = await db.user.findUniqueOrThrow({ where: { id: created.userId }, include: { account: true } });
    expect(user).toMatchObject({
      email: 'owner@acme.test',
      firstName: 'Olive',
      lastName: 'Owner',
      accountId: created.accountId,
      account: { name: 'Acme' },
    });

    service = await startService(env);
    const response = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': created.apiKey } });
    expect(await response.json()).toEqual({
      id: created.userId,
      first_name: 'Olive',
      last_name: 'Owner',
      email: 'owner@acme.test',
    });
  });

  it('exits 2 with a usage message on bad arguments, creating nothing', async () => {
    const before = await db.account.count();
    for (const args of [
      ['account', 'create', '--name', 'No Email'],
      ['account', 'create', '--email', 'x@y.test'],
      ['account', 'create', '--name', 'X', '--email', 'x@y.test', '--colour', 'red'],
      ['account', 'create', '--name', 'X', '--email', 'x@y.test', 'extra'],
      ['account', 'remove'],
      ['accounts'],
      [],
    ]) {
      const result = await runSignet(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('Usage: signet');
    }
    expect(await db.account.count()).toBe(before);
  });

  it('exits 2 on an invalid or taken email, leaving no half-created account', async () => {
    const before = await db.account.count();
    const invalid = await runSignet(['account', 'create', '--name', 'X', '--email', 'not-an-email'], env);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('email is invalid');
    const taken = await runSignet(['account', 'create', '--name', 'Acme Again', '--email', 'owner@acme.test'], env);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain('email has already been taken');
    expect(taken.stdout).toBe('');
    expect(await db.account.count()).toBe(before);
    expect(await db.account.findFirst({ where: { name: 'Acme Again' } })).toBeNull();
  });
});

describe('signet api-key', () => {
  it('creates, lists and revokes keys; a revoked key gets 401', async () => {
    const owner = await db.user.findUniqueOrThrow({ where: { email: 'owner@acme.test' } });
    const created = await runSignet(['api-key', 'create', '--user-id', String(owner.id), '--name', 'zapier'], env);
    expect(created.code).toBe(0);
    const key = jsonLine(created.stdout);
    expect(key).toMatchObject({
      id: expect.any(Number),
      userId: owner.id,
      accountId: owner.accountId,
      name: 'zapier',
      apiKey: expect.stringMatching(/^sgt_/),
    });

    const listed = await runSignet(['api-key', 'list', '--account-id', String(owner.accountId)], env);
    expect(listed.code).toBe(0);
    const keys = jsonLine(listed.stdout);
    expect(keys.map((k: { name: string }) => k.name)).toEqual(['default', 'zapier']);
    expect(keys[1]).toMatchObject({ id: key.id, prefix: key.apiKey.slice(0, 9), revokedAt: null });
    expect(listed.stdout).not.toContain(key.apiKey);

    const ok = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': key.apiKey } });
    expect(ok.status).toBe(200);

    const revoked = await runSignet(['api-key', 'revoke', '--key-id', String(key.id)], env);
    expect(revoked.code).toBe(0);
    expect(jsonLine(revoked.stdout)).toEqual({ id: key.id, revokedAt: expect.stringMatching(/Z$/) });
    const refused = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': key.apiKey } });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'Not authenticated' });
  });

  it('exits 2 on bad ids', async () => {
    for (const args of [
      ['api-key', 'create', '--user-id', 'abc'],
      ['api-key', 'create', '--user-id', '-1'],
      ['api-key', 'create'],
      ['api-key', 'revoke', '--key-id', '1.5'],
      ['api-key', 'list'],
    ]) {
      const result = await runSignet(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('Usage: signet');
    }
    const missingUser = await runSignet(['api-key', 'create', '--user-id', '99999'], env);
    expect(missingUser.code).toBe(2);
    expect(missingUser.stderr).toContain('User 99999 not found');
    const missingKey = await runSignet(['api-key', 'revoke', '--key-id', '99999'], env);
    expect(missingKey.code).toBe(2);
    expect(missingKey.stderr).toContain('API key 99999 not found');
  });

  it('makes keys with scopes (repeated or comma-separated), folders; lists them; read keys cannot write', async () => {
    const owner = await db.user.findUniqueOrThrow({ where: { email: 'owner@acme.test' } });
    const user = ['--user-id', String(owner.id)];
    const read = await runSignet(
      [
        'api-key',
        'create',
        ...user,
        '--name',
        'reader',
        '--scope',
        'read',
        '--folders',
        'Sales',
        '--folders',
        'HR / 2026',
      ],
      env,
    );
    expect(read.code, read.stderr).toBe(0);
    const reader = jsonLine(read.stdout);
    expect(reader).toMatchObject({ name: 'reader', scopes: ['read'], folders: ['Sales', 'HR / 2026'] });
    const both = jsonLine((await runSignet(['api-key', 'create', ...user, '--scope', 'read,write'], env)).stdout);
    expect(both).toMatchObject({ scopes: ['read', 'write'], folders: [] });
    // write brings read.
    const writer = jsonLine((await runSignet(['api-key', 'create', ...user, '--scope', 'write'], env)).stdout);
    expect(writer.scopes).toEqual(['read', 'write']);

    const listed = jsonLine(
      (await runSignet(['api-key', 'list', '--account-id', String(owner.accountId)], env)).stdout,
    );
    expect(listed.find((k: { id: number }) => k.id === reader.id)).toMatchObject({
      scopes: ['read'],
      folders: ['Sales', 'HR / 2026'],
    });
    expect(listed.find((k: { name: string }) => k.name === 'default')).toMatchObject({
      scopes: ['read', 'write'],
      folders: [],
    });

    const get = await fetch(`${service.url}/api/templates`, { headers: { 'X-Auth-Token': reader.apiKey } });
    expect(get.status).toBe(200);
    const put = await fetch(`${service.url}/api/templates/1`, {
      method: 'PUT',
      headers: { 'X-Auth-Token': reader.apiKey, 'content-type': 'application/json' },
      body: '{"name":"x"}',
    });
    expect(put.status).toBe(403);
    expect(await put.json()).toEqual({ error: 'Not authorized: this API key lacks the "write" scope' });

    const before = await db.apiKey.count();
    const bad = await runSignet(['api-key', 'create', ...user, '--scope', 'admin'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('scopes must be read or write');
    expect(await db.apiKey.count()).toBe(before);
  });
});

describe('signet account settings', () => {
  it('prints the settings, stores combine-pdf-result in the account preferences, exits 2 on bad input', async () => {
    const created = jsonLine(
      (await runSignet(['account', 'create', '--name', 'Gamma', '--email', 'owner@gamma.test'], env)).stdout,
    );
    const id = String(created.accountId);
    const read = await runSignet(['account', 'settings', '--account-id', id], env);
    expect(read.code, read.stderr).toBe(0);
    const none = { accountId: created.accountId, reminders: null, defaultLanguage: null, consentText: null };
    expect(jsonLine(read.stdout)).toEqual({ ...none, combinePdfResult: false });
    const set = await runSignet(['account', 'settings', '--account-id', id, '--combine-pdf-result', 'true'], env);
    expect(set.code, set.stderr).toBe(0);
    expect(jsonLine(set.stdout)).toEqual({ ...none, combinePdfResult: true });
    const stored = await db.account.findUniqueOrThrow({ where: { id: created.accountId } });
    expect(stored.preferences).toEqual({ combine_pdf_result: true });

    const bad = await runSignet(['account', 'settings', '--account-id', id, '--combine-pdf-result', 'yes'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--combine-pdf-result must be true or false');
    const unknown = await runSignet(['account', 'settings', '--account-id', '99999999'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Account 99999999 not found');
  });

  // Five CLI processes, each opening the database: ~30 s on a busy two-core machine.
  it('sets the default reminders from --reminders JSON (docs/reminders.md), exits 2 on nonsense', {
    timeout: 90_000,
  }, async () => {
    const created = jsonLine(
      (await runSignet(['account', 'create', '--name', 'Delta', '--email', 'owner@delta.test'], env)).stdout,
    );
    const id = String(created.accountId);
    const reminders = '{"first_after_hours":24,"every_hours":48,"max_count":3}';
    const set = await runSignet(['account', 'settings', '--account-id', id, '--reminders', reminders], env);
    expect(set.code, set.stderr).toBe(0);
    const expected = { first_after_hours: 24, every_hours: 48, max_count: 3, send_email: true, send_sms: false };
    expect(jsonLine(set.stdout)).toEqual({
      accountId: created.accountId,
      combinePdfResult: false,
      reminders: expected,
      defaultLanguage: null,
      consentText: null,
    });
    const stored = await db.account.findUniqueOrThrow({ where: { id: created.accountId } });
    expect(stored.preferences).toEqual({ reminders: expected });

    const refusals = [
      ['{"max_count":2,"first_after_hours":1}', 'every_hours is required when max_count is over 1 in `reminders`.'],
      ['{"max_count":99}', 'must be at most 10 in `reminders.max_count`.'],
      ['daily', '--reminders must be JSON'],
    ] as const;
    const answers = await Promise.all(
      refusals.map(([value]) => runSignet(['account', 'settings', '--account-id', id, '--reminders', value], env)),
    );
    answers.forEach((bad, i) => {
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stderr).toContain(refusals[i]![1]);
    });
    expect((await db.account.findUniqueOrThrow({ where: { id: created.accountId } })).preferences).toEqual({
      reminders: expected,
    });
  });

  it('sets the default language of signers from --default-language (a tag stored as its code), "" removes it', {
    timeout: 90_000,
  }, async () => {
    const created = jsonLine(
      (await runSignet(['account', 'create', '--name', 'Epsilon', '--email', 'owner@epsilon.test'], env)).stdout,
    );
    const id = String(created.accountId);
    const set = await runSignet(['account', 'settings', '--account-id', id, '--default-language', 'de-CH'], env);
    expect(set.code, set.stderr).toBe(0);
    expect(jsonLine(set.stdout)).toMatchObject({ accountId: created.accountId, defaultLanguage: 'de' });
    expect((await db.account.findUniqueOrThrow({ where: { id: created.accountId } })).preferences).toEqual({
      default_language: 'de',
    });
    const [bad, removed] = await Promise.all([
      runSignet(['account', 'settings', '--account-id', id, '--default-language', 'Elvish'], env),
      runSignet(['account', 'settings', '--account-id', id, '--default-language', ''], env),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('language must be one of en, es, it, de,');
    expect(removed.code, removed.stderr).toBe(0);
    expect(jsonLine(removed.stdout)).toMatchObject({ defaultLanguage: null });
    expect((await db.account.findUniqueOrThrow({ where: { id: created.accountId } })).preferences).toEqual({});
  });
});

describe('signet account list, signet user list', () => {
  it('print every account and user as one JSON array, archived ones marked, never a key', async () => {
    const created = jsonLine(
      (
        await runSignet(
          ['account', 'create', '--name', 'Beta', '--email', 'owner@beta.test', '--first-name', 'Bea'],
          env,
        )
      ).stdout,
    );
    await db.account.update({
      where: { id: created.accountId },
      data: { archivedAt: new Date('2026-11-20T10:00:00.000Z') },
    });
    await db.user.update({ where: { id: created.userId }, data: { archivedAt: new Date('2026-11-20T10:00:00.000Z') } });

    const accounts = await runSignet(['account', 'list'], env);
    expect(accounts.code, accounts.stderr).toBe(0);
    const listedAccounts = jsonLine(accounts.stdout);
    const stored = await db.account.findMany({
      orderBy: { id: 'asc' },
      include: { _count: { select: { users: true } } },
    });
    expect(listedAccounts).toEqual(
      stored.map((a) => ({
        id: a.id,
        name: a.name,
        testing: a.testing,
        createdAt: a.createdAt.toISOString(),
        archivedAt: a.archivedAt?.toISOString() ?? null,
        userCount: a._count.users,
      })),
    );
    expect(listedAccounts.find((a: { id: number }) => a.id === created.accountId)).toMatchObject({
      name: 'Beta',
      archivedAt: '2026-11-20T10:00:00.000Z',
      userCount: 1,
    });

    const users = await runSignet(['user', 'list'], env);
    expect(users.code, users.stderr).toBe(0);
    const listedUsers = jsonLine(users.stdout);
    expect(listedUsers.map((u: { id: number }) => u.id)).toEqual(
      (await db.user.findMany({ orderBy: { id: 'asc' } })).map((u) => u.id),
    );
    expect(listedUsers.find((u: { id: number }) => u.id === created.userId)).toEqual({
      id: created.userId,
      accountId: created.accountId,
      email: 'owner@beta.test',
      firstName: 'Bea',
      lastName: null,
      role: 'admin',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      archivedAt: '2026-11-20T10:00:00.000Z',
    });

    const ofAcme = await runSignet(['user', 'list', '--account-id', String(listedAccounts[0].id)], env);
    expect(jsonLine(ofAcme.stdout).map((u: { email: string }) => u.email)).toEqual(['owner@acme.test']);
    expect(jsonLine((await runSignet(['user', 'list', '--account-id', '99999'], env)).stdout)).toEqual([]);

    // No secret of any kind: neither a token nor a stored hash.
    const hashes = (await db.apiKey.findMany()).map((k) => k.tokenHash);
    for (const output of [accounts.stdout, users.stdout]) {
      expect(output).not.toMatch(/sgt_|hash|secret/i);
      for (const hash of hashes) expect(output).not.toContain(hash);
    }
  });

  it('exit 2 on bad arguments', async () => {
    for (const [args, message] of [
      [['user', 'list', '--account-id', 'x'], /--account-id must be a positive integer/],
      [['account', 'list', 'extra'], /Unexpected argument "extra"/],
      [['user', 'list', '--email', 'a@b.test'], /Unknown option '--email'/],
    ] as const) {
      const result = await runSignet([...args], env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toContain('Usage: signet');
    }
  });
});

describe('signet help', () => {
  // A database that does not exist: help must not need one.
  const nowhere = { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/nowhere' };

  it("<command> --help, -h and `help <command>` print that command's usage on stdout and exit 0", async () => {
    const cases: [string[], string, string[]][] = [
      [
        ['api-key', '--help'],
        'Usage: signet api-key <create|revoke|list> [options]',
        ['api-key create --user-id N', 'api-key revoke --key-id N', 'api-key list --account-id N'],
      ],
      [['api-key', '-h'], 'Usage: signet api-key <create|revoke|list> [options]', ['api-key create --user-id N']],
      [['help', 'api-key'], 'Usage: signet api-key <create|revoke|list> [options]', ['api-key revoke --key-id N']],
      [
        ['api-key', 'create', '--help'],
        'Usage: signet api-key create --user-id N [--name LABEL] [--scope read|write]... [--folders FOLDER]...',
        ['Creates an API key for a user'],
      ],
      [
        ['api-key', 'create', '--user-id', 'abc', '-h'],
        'Usage: signet api-key create --user-id N [--name LABEL] [--scope read|write]... [--folders FOLDER]...',
        ['shown only this once'],
      ],
      [
        ['help', 'api-key', 'create'],
        'Usage: signet api-key create --user-id N [--name LABEL] [--scope read|write]... [--folders FOLDER]...',
        ['Creates an API key for a user'],
      ],
      [
        ['account', '--help'],
        'Usage: signet account <create|list|settings> [options]',
        ['account create --name NAME', 'account list', 'account settings --account-id N'],
      ],
      [['account', 'list', '-h'], 'Usage: signet account list', ['Prints every account']],
      [
        ['user', 'list', '--help'],
        'Usage: signet user list [--account-id N]',
        ['signet api-key create --user-id <id>'],
      ],
      [
        ['webhook', 'add', '--help'],
        'Usage: signet webhook add --account-id N --url URL [--events form.completed,...] [--header-name NAME ' +
          '--header-value VALUE]',
        ['WEBHOOK_ALLOWED_HOSTS'],
      ],
      [['help', 'migrate'], 'Usage: signet migrate', ['Applies pending database migrations']],
      [['migrate', '--help'], 'Usage: signet migrate', ['Applies pending database migrations']],
      [
        ['--help'],
        'Usage: signet <command> [options]',
        ['api-key create', 'user list', 'account list', 'signet <command> --help'],
      ],
      [['help'], 'Usage: signet <command> [options]', ['webhook add']],
    ];
    // The CLI processes run together: one after another they take most of the test's time on a busy machine.
    const results = await Promise.all(cases.map(([args]) => runSignet(args, nowhere)));
    for (const [i, [args, head, contains]] of cases.entries()) {
      const result = results[i]!;
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout.split('\n')[0], args.join(' ')).toBe(head);
      for (const text of contains) expect(result.stdout, args.join(' ')).toContain(text);
    }
    // One command's usage names only that command.
    const one = await runSignet(['api-key', 'create', '--help'], nowhere);
    expect(one.stdout).not.toMatch(/api-key revoke|webhook add/);
  }, 90_000);

  it('an unknown command or a group without its command exits 2 with a message and the usage', async () => {
    const unknown = await runSignet(['help', 'nope'], nowhere);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^signet: Unknown command "nope"/);
    const group = await runSignet(['api-key'], nowhere);
    expect(group.code).toBe(2);
    expect(group.stderr).toMatch(
      /^signet: "api-key" needs a command\n\nUsage: signet api-key <create\|revoke\|list> \[options\]/,
    );
  });
});

describe('bin/signet.mjs', () => {
  it('runs dist/cli.mjs while it is newer than every file under src/, else the source through tsx', () => {
    // A tree of its own: bin/signet.mjs as shipped, a "bundle" and a "source" that say which ran.
    const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-bin-'));
    try {
      for (const dir of ['bin', 'dist', 'src/cli']) fs.mkdirSync(path.join(tree, dir), { recursive: true });
      fs.copyFileSync(path.join(ROOT, 'bin', 'signet.mjs'), path.join(tree, 'bin', 'signet.mjs'));
      fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
      fs.writeFileSync(path.join(tree, 'package.json'), '{"type": "module"}\n');
      const source = path.join(tree, 'src', 'cli', 'main.ts');
      const bundle = path.join(tree, 'dist', 'cli.mjs');
      fs.writeFileSync(source, "const ran: string = 'source';\nprocess.stdout.write(ran);\n");
      fs.writeFileSync(bundle, "process.stdout.write('bundle');\n");
      const run = () => execFileSync(process.execPath, [path.join(tree, 'bin', 'signet.mjs')], { encoding: 'utf8' });
      const at = (file: string, seconds: number) => fs.utimesSync(file, seconds, seconds);

      at(source, 1_000_000);
      at(bundle, 2_000_000);
      expect(run()).toBe('bundle');
      at(source, 3_000_000); // an edit after the build
      expect(run()).toBe('source');
      fs.rmSync(bundle); // never built
      expect(run()).toBe('source');
    } finally {
      fs.rmSync(tree, { recursive: true, force: true });
    }
  });
});
