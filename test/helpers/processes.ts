/** Running the service and the CLI as real child processes. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { findFreePort as freePort } from '../../src/util/free-port.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment for a child: ours minus database settings, plus `env`. */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.DATA_DIR;
  delete base.PORT;
  delete base.NODE_OPTIONS;
  delete base.VITEST;
  delete base.VITEST_WORKER_ID;
  return { ...base, ...env };
}

/** Runs `bin/signet.mjs` with arguments; resolves when it exits. */
export function runSignet(args: string[], env: Record<string, string | undefined>): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'signet.mjs'), ...args], {
      cwd: ROOT,
      env: childEnv(env),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

let built: Promise<void> | undefined;

/**
 * Builds dist/main.mjs with scripts/build.mjs, once per test file, unless the run's global setup
 * (test/global-setup.ts) already built it: then nothing, so no file rebuilds dist/ under another's
 * running service.
 */
export function buildService(): Promise<void> {
  if (inject('serviceBuilt')) return Promise.resolve();
  built ??= new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`scripts/build.mjs exited with ${code}`))));
  });
  return built;
}

/**
 * The environment of a service a test starts on its own database and DATA_DIR (NODE_ENV test, no
 * development account, warnings only, APP_URL on `port`); a test adds what it checks.
 */
export function testServiceEnv(options: {
  databaseUrl: string;
  dataDir: string;
  port: number;
}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    DATABASE_URL: options.databaseUrl,
    DATA_DIR: options.dataDir,
    PORT: String(options.port),
    APP_URL: `http://127.0.0.1:${options.port}`,
    CREATE_DEV_ACCOUNT: 'false',
    LOG_LEVEL: 'warn',
  };
}

/**
 * Starts the service as `npm start` does (build, then `node dist/main.mjs`) and waits until
 * /health answers 200 and the banner is out (or it exits).
 * @param root the project folder to run `dist/main.mjs` from (default: this one, built first);
 *   another one is a copy of this one with dist/ already in it
 * @param entry node's arguments instead of `dist/main.mjs` (a test-only entry, e.g.
 *   `['--import', 'tsx', 'test/helpers/paused-service.ts']`, run from `root`; nothing is built)
 */
export async function startService(
  env: Record<string, string | undefined>,
  timeoutMs = 60_000,
  root = ROOT,
  entry?: string[],
): Promise<ServiceProcess> {
  if (root === ROOT && !entry) await buildService();
  const port = Number(env.PORT ?? (await freePort()));
  const args = entry ?? [path.join(root, 'dist', 'main.mjs')];
  const child = spawn(process.execPath, ['--enable-source-maps', ...args], {
    cwd: root,
    // Loopback unless the test asks for another HOST (`HOST: undefined`: the service's default).
    env: childEnv({ LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env, PORT: String(port) }),
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}:\n${output}`);
    try {
      const response = await fetch(`${url}/health`);
      // The banner (with a first start's key) is written right after listening.
      if (response.status === 200 && output.includes('Signet is running')) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A TCP port free on 127.0.0.1 right now (also: a port on which nothing answers). */
export { findFreePort as freePort } from '../../src/util/free-port.ts';
