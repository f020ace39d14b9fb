/**
 * Benchmark workers: the bench script itself run again in a child process (`node --import tsx
 * <script>` with `<modeEnv>=<mode>`), answering requests over IPC, so that what is measured runs
 * alone in its own process (its CPU time and peak RSS are its own). Used by bench/templates.ts
 * and bench/completion.ts.
 *
 * Protocol: the worker sends `{type: 'ready'}` once set up, then one reply per request:
 * `{type: 'result', result}` or `{type: 'error', error}`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cleanUpOnSignals, describeError, onCleanup, runBench } from './cleanup.ts';
import { REPO_ROOT } from './processes.ts';

export type WorkerReply = { type: 'ready' } | { type: 'result'; result: unknown } | { type: 'error'; error: string };

export interface Worker<Request> {
  mode: string;
  pid: number;
  /** Sends a request and resolves with the worker's result. @throws Error when it answers an error or exits */
  call<T>(request: Request): Promise<T>;
  /** Disconnects and waits for the exit (SIGKILL after 30 s). */
  stop(): Promise<void>;
}

/**
 * Starts `script` (relative to the repository) as a worker in `mode` and waits for its `ready`.
 * @param modeEnv the environment variable that tells the script it is a worker, and which
 * @throws Error naming the worker and the tail of its output when it fails to start
 */
export async function startWorker<Request>(
  script: string,
  modeEnv: string,
  mode: string,
  env: NodeJS.ProcessEnv,
  nodeArgs: string[] = [],
): Promise<Worker<Request>> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env: { ...env, [modeEnv]: mode },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  if (child.pid === undefined) throw new Error(`could not spawn the ${mode} worker`);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8192);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = onCleanup(`stop the ${mode} worker (pid ${child.pid})`, () => stopWorkerProcess(child, exited));

  const nextReply = () =>
    new Promise<WorkerReply>((resolve, reject) => {
      const onMessage = (reply: WorkerReply) => {
        child.off('exit', onExit);
        resolve(reply);
      };
      const onExit = (code: number | null, signal: string | null) => {
        child.off('message', onMessage);
        reject(new Error(`the ${mode} worker exited (code ${code}, signal ${signal}):\n${tail}`));
      };
      child.once('message', onMessage);
      child.once('exit', onExit);
    });

  const ready = await nextReply();
  if (ready.type !== 'ready')
    throw new Error(
      `the ${mode} worker failed to start: ${ready.type === 'error' ? ready.error : JSON.stringify(ready)}`,
    );
  return {
    mode,
    pid: child.pid,
    async call<T>(request: Request): Promise<T> {
      const reply = nextReply();
      child.send(request as object);
      const answer = await reply;
      if (answer.type === 'error') throw new Error(`${mode} worker: ${answer.error}`);
      if (answer.type !== 'result') throw new Error(`${mode} worker answered ${JSON.stringify(answer)}`);
      return answer.result as T;
    },
    stop,
  };
}

async function stopWorkerProcess(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  if (child.connected) child.disconnect();
  else child.kill('SIGTERM');
  await exited;
  clearTimeout(timer);
}

/** What a worker does with each request, and how it ends. */
export interface WorkerHandler<Request> {
  run(request: Request): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * The entry of a bench script that is also its own workers' program: in a worker (`modeEnv` set)
 * sets up `createHandler(mode)`, says `ready`, answers each request with `{type: 'result'}` or
 * `{type: 'error'}`, and closes and exits when the parent disconnects (after reading its VmHWM);
 * a failure to set up is sent as an error and the worker exits 1. Otherwise cleans up on signals
 * and runs `main` (runBench).
 */
export function runWorkerOrBench<Mode extends string, Request>(
  modeEnv: string,
  createHandler: (mode: Mode) => Promise<WorkerHandler<Request>>,
  main: () => Promise<number>,
): void {
  const mode = process.env[modeEnv] as Mode | undefined;
  if (!mode) {
    cleanUpOnSignals();
    runBench(main);
    return;
  }
  const send = (reply: WorkerReply) => process.send!(reply);
  createHandler(mode).then(
    (handler) => {
      process.on('message', (request: Request) => {
        handler.run(request).then(
          (result) => send({ type: 'result', result }),
          (error: unknown) => send({ type: 'error', error: describeError(error) }),
        );
      });
      process.once('disconnect', () => {
        void handler.close().finally(() => process.exit(0));
      });
      send({ type: 'ready' });
    },
    (error: unknown) => {
      process.send?.({ type: 'error', error: describeError(error) } satisfies WorkerReply);
      process.exitCode = 1;
      process.disconnect?.();
    },
  );
}
