/**
 * The first minutes at a terminal (issue 18, "The first minutes"), on real processes:
 * - `npm start`'s own command line (package.json, the build step left out: the run's global setup
 *   built dist/ already) in a terminal (`script`, util-linux, gives the process a pseudo-terminal)
 *   writes pino-pretty's lines; the same command without a terminal, or with NODE_ENV=production,
 *   writes JSON lines;
 * - with the development account on and HOST unset, the service listens on loopback only (the
 *   listening socket's address in /proc/net/tcp, as the kernel has it) and the banner says so;
 *   HOST=0.0.0.0 listens on every interface.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { buildService, childEnv, freePort, ROOT, startService, type ServiceProcess } from './helpers/processes.ts';

let database: TestDatabase;
let service: ServiceProcess | undefined;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-first-minutes-'));

beforeAll(async () => {
  database = await createTestDatabase();
  await buildService();
}, 120_000);
afterEach(async () => {
  await service?.stop();
  service = undefined;
});
afterAll(async () => {
  await database?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** package.json's start command without its build step (dist/ is built: see the module comment). */
function startCommand(): string {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts;
  const command = scripts.start.replace(/^node scripts\/build\.mjs && /, '');
  expect(command).not.toBe(scripts.start);
  return command;
}

/**
 * Runs the start command in `sh` (as npm runs scripts), in a terminal or not, until its output
 * shows the service listening, then stops it with SIGTERM; resolves to what it wrote.
 */
async function runStart(env: Record<string, string | undefined>, terminal: boolean): Promise<string> {
  const port = await freePort();
  const shell = `exec sh -c '${startCommand().replace(/'/g, `'\\''`)}'`;
  const [file, args] = terminal ? ['script', ['-qfec', shell, '/dev/null']] : ['sh', ['-c', shell]];
  const child = spawn(file, args, {
    cwd: ROOT,
    env: childEnv({
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      CREATE_DEV_ACCOUNT: 'false',
      LOG_LEVEL: 'info',
      PORT: String(port),
      HOST: '127.0.0.1',
      ...env,
    }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 60_000;
  while (!output.includes('Signet is running') && child.exitCode === null && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  // `script` passes the signal to the terminal's process group: the service stops as after Ctrl-C.
  child.kill('SIGTERM');
  await exited;
  expect(output).toContain('Signet is running');
  return output;
}

/** ANSI colours (SGR) as pino-pretty writes them. */
const ESC = String.fromCharCode(27);
const GREEN = `${ESC}[32m`;
const DEFAULT_COLOUR = `${ESC}[39m`;
const withoutColours = (text: string) =>
  text
    .split(ESC)
    .map((part, i) => (i === 0 ? part : part.replace(/^\[\d+m/, '')))
    .join('');

/** Log lines that are pino's JSON objects. */
const jsonLines = (output: string) => output.split(/\r?\n/).filter((line) => /^\{"level":\d+/.test(line.trim()));

describe('log lines of `npm start`', { timeout: 120_000 }, () => {
  it('are pino-pretty lines in a terminal (NODE_ENV unset: npm start makes it production afterwards)', async () => {
    const output = await runStart({ NODE_ENV: undefined }, true);
    expect(jsonLines(output)).toEqual([]);
    // pino-pretty: `[HH:MM:SS.mmm] INFO (<pid>): <message>`, coloured for the terminal.
    expect(output).toContain(`${GREEN}INFO${DEFAULT_COLOUR}`);
    expect(withoutColours(output)).toMatch(/\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(\d+\): Signet is listening/);
  });

  it('are JSON lines without a terminal', async () => {
    const output = await runStart({ NODE_ENV: undefined }, false);
    const lines = jsonLines(output).map((line) => JSON.parse(line) as { msg: string; level: number });
    expect(lines.map((line) => line.msg)).toContain('Signet is listening');
  });

  it('are JSON lines in a terminal when NODE_ENV=production is asked for', async () => {
    const output = await runStart({ NODE_ENV: 'production' }, true);
    expect(jsonLines(output).map((line) => (JSON.parse(line) as { msg: string }).msg)).toContain('Signet is listening');
    expect(output).not.toContain(`${GREEN}INFO`);
  });
});

/** The local addresses (IPv4, dotted) of the sockets listening on `port`, from /proc/net/tcp. */
function listeningAddresses(port: number): string[] {
  const rows = readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1);
  const addresses: string[] = [];
  for (const row of rows) {
    const [, local, , state] = row.trim().split(/\s+/);
    if (!local || state !== '0A') continue; // 0A: LISTEN
    const [hexAddress, hexPort] = local.split(':');
    if (Number.parseInt(hexPort!, 16) !== port) continue;
    // Little-endian bytes on x86: 0100007F is 127.0.0.1.
    const bytes = hexAddress!.match(/../g)!.map((byte) => Number.parseInt(byte, 16));
    addresses.push(bytes.reverse().join('.'));
  }
  return addresses;
}

describe('the address it listens on', { timeout: 120_000 }, () => {
  it('is loopback with the development account and HOST unset, and the banner says so', async () => {
    service = await startService({
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      NODE_ENV: 'production',
      CREATE_DEV_ACCOUNT: 'true',
      HOST: undefined,
    });
    const port = Number(new URL(service.url).port);
    expect(listeningAddresses(port)).toEqual(['127.0.0.1']);
    expect(service.output()).toContain('Listening on 127.0.0.1 only');
    expect(service.output()).toContain('Set HOST=0.0.0.0 to listen on every interface.');
  });

  it('is every interface with HOST=0.0.0.0, and the banner says nothing of loopback', async () => {
    service = await startService({
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      NODE_ENV: 'production',
      CREATE_DEV_ACCOUNT: 'true',
      HOST: '0.0.0.0',
    });
    expect(listeningAddresses(Number(new URL(service.url).port))).toEqual(['0.0.0.0']);
    expect(service.output()).not.toContain('Listening on');
  });
});
