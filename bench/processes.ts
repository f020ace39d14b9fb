/**
 * Child processes for the benchmarks: servers started as `node <file>` (`.ts` files through
 * `--import tsx`; the pid is the node process itself, not an npm/sh wrapper), readiness polling,
 * stopping, and RSS.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (the children run from here so `--import tsx` resolves). */
export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Builds dist/main.mjs as `npm start` does (scripts/build.mjs). */
export function buildService(): void {
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' });
}

export interface NodeChild {
  process: ChildProcess;
  pid: number;
  /** Last ~8 KB of the child's stdout and stderr, for error messages. */
  output(): string;
  /**
   * Resolves with the first stdout line matching `pattern` (also
   * one already printed); rejects if the child exits first.
   */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  exited(): boolean;
}

const alive = new Set<ChildProcess>();

// Last resort: never leave a server behind, whatever way this process ends.
process.on('exit', () => {
  for (const child of alive) child.kill('SIGKILL');
});

/**
 * Spawns `node <file>` with exactly `env` (not merged with process.env): `.ts` files through
 * `--import tsx`, JavaScript (the built service, dist/main.mjs) as `npm start` runs it.
 * @param file path relative to the repository root
 * @param nodeArgs more node options before the file (e.g. `--cpu-prof`, which NODE_OPTIONS refuses)
 */
export function spawnNode(file: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): NodeChild {
  const args = [...nodeArgs, ...(file.endsWith('.ts') ? ['--import', 'tsx', file] : ['--enable-source-maps', file])];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not spawn node for ${file}`);
  alive.add(child);
  child.once('exit', () => alive.delete(child));

  let tail = '';
  let stdoutBuffer = '';
  const seenLines: string[] = [];
  const lineListeners = new Set<(line: string) => void>();
  const keep = (text: string) => {
    tail = (tail + text).slice(-8192);
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    keep(text);
    stdoutBuffer += text;
    let newline: number;
    while ((newline = stdoutBuffer.indexOf('\n')) >= 0) {
      const line = stdoutBuffer.slice(0, newline);
      stdoutBuffer = stdoutBuffer.slice(newline + 1);
      seenLines.push(line);
      if (seenLines.length > 200) seenLines.shift();
      for (const listener of lineListeners) listener(line);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => keep(chunk.toString('utf8')));

  return {
    process: child,
    pid: child.pid,
    output: () => tail,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    waitForLine(pattern, timeoutMs) {
      for (const line of seenLines) {
        const match = pattern.exec(line);
        if (match) return Promise.resolve(match);
      }
      return new Promise((resolve, reject) => {
        const done = (error?: Error, match?: RegExpExecArray) => {
          clearTimeout(timer);
          lineListeners.delete(onLine);
          child.off('exit', onExit);
          if (error) reject(error);
          else resolve(match!);
        };
        const onLine = (line: string) => {
          const match = pattern.exec(line);
          if (match) done(undefined, match);
        };
        const onExit = (code: number | null, signal: string | null) =>
          done(new Error(`${file} exited (code ${code}, signal ${signal}) before printing ${pattern}:\n${tail}`));
        const timer = setTimeout(
          () => done(new Error(`${file} did not print ${pattern} within ${timeoutMs} ms:\n${tail}`)),
          timeoutMs,
        );
        lineListeners.add(onLine);
        child.once('exit', onExit);
        if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
      });
    },
  };
}

/**
 * Polls `GET <baseUrl>/health` every 20 ms until it answers 200.
 * @returns milliseconds from `since` (a performance.now() value) to the first 200
 * @throws when the child exits first or `timeoutMs` passes
 */
export async function waitHealthy(
  child: NodeChild,
  baseUrl: string,
  since: number,
  timeoutMs: number,
): Promise<number> {
  const deadline = since + timeoutMs;
  while (performance.now() < deadline) {
    if (child.exited()) throw new Error(`the server exited before /health answered 200:\n${child.output()}`);
    try {
      const response = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) return performance.now() - since;
    } catch {
      // not listening yet
    }
    await sleep(20);
  }
  throw new Error(`/health did not answer 200 within ${timeoutMs / 1000} s:\n${child.output()}`);
}

/**
 * SIGTERM, then waits for exit; SIGKILL after `timeoutMs`.
 * @returns milliseconds until the process exited
 */
export async function stopChild(child: NodeChild, timeoutMs = 30_000): Promise<number> {
  const started = performance.now();
  if (child.exited()) return 0;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.process.kill('SIGKILL'), timeoutMs);
    child.process.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.process.kill('SIGTERM');
  });
  return performance.now() - started;
}

/**
 * Resident set size of a process in MB (MiB), from /proc/<pid>/status VmRSS.
 * @throws when the process is not a node process (guards against measuring a wrapper)
 */
export async function rssMb(pid: number): Promise<number> {
  const comm = (await fs.readFile(`/proc/${pid}/comm`, 'utf8')).trim();
  if (comm !== path.basename(process.execPath) && comm !== 'node') {
    throw new Error(`process ${pid} is '${comm}', not node`);
  }
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU time (user + system, all threads) a process has used so far, in milliseconds, from /proc/<pid>/stat. */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** A TCP port free on 127.0.0.1 right now. */
export { findFreePort as freePort } from '../src/util/free-port.ts';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The environment for a child: this process's, without the variables that would change which
 * database or port Signet uses, plus `overrides`.
 */
export function childEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of [
    'DATABASE_URL',
    'DATA_DIR',
    'PORT',
    'HOST',
    'APP_URL',
    'EMBEDDED_POSTGRES_PORT',
    'CREATE_DEV_ACCOUNT',
    'LOG_LEVEL',
  ]) {
    delete env[name];
  }
  return { ...env, ...overrides };
}
