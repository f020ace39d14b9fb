/**
 * Cleanup for the benchmarks: every resource registers its undo step as soon as it exists; the
 * steps run in reverse order at the end, on failure, and on Ctrl-C.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const cleanups: { label: string; step: () => Promise<void> }[] = [];

/** Registers an undo step; the returned function runs it now (and not again at the end). */
export function onCleanup(label: string, step: () => Promise<void>): () => Promise<void> {
  const entry = { label, step };
  cleanups.push(entry);
  return async () => {
    const index = cleanups.indexOf(entry);
    if (index < 0) return;
    cleanups.splice(index, 1);
    await step();
  };
}

/** Runs every registered step, newest first; a failing step is reported and the rest still run. */
export async function runCleanups(): Promise<void> {
  while (cleanups.length > 0) {
    const { label, step } = cleanups.pop()!;
    try {
      await step();
    } catch (error) {
      process.stderr.write(`cleanup: ${label} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
}

/** On SIGINT/SIGTERM: run the cleanups, then exit 130. */
export function cleanUpOnSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: cleaning up\n`);
      void runCleanups().finally(() => process.exit(130));
    });
  }
}

/**
 * Runs a benchmark's main: its resolved number is the exit code; a failure prints
 * "bench failed: <stack>", runs the clean-ups and exits 1.
 */
export function runBench(main: () => Promise<number>): void {
  main()
    .then((code) => {
      process.exitCode = code;
    })
    .catch(async (error: unknown) => {
      process.stderr.write(`bench failed: ${describeError(error)}\n`);
      await runCleanups();
      process.exitCode = 1;
    });
}

/** An error's stack (or message), or the thrown value as text. */
export function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** A new directory under the OS temp dir (`prefix` + random), removed at cleanup. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  onCleanup(`remove ${dir}`, () => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}
