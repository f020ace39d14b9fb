/**
 * The parse pool's CPU clock (src/parse-pool/thread-clock.ts): a worker thread that computes is
 * charged its CPU time, one that waits is charged almost none — so a task waiting for a core on a
 * busy machine is not stopped as if it had used PARSE_TIMEOUT_SECONDS (issue 23: a CPU-time limit).
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { kernelThreadId, threadCpuMs } from '../src/parse-pool/thread-clock.ts';

/** Starts a worker that reports its kernel thread id, then spins or sleeps for `ms` and exits. */
function worker(kind: 'spin' | 'sleep', ms: number): Promise<{ tid: number; done: Promise<void> }> {
  const source = `
    const { parentPort } = require('node:worker_threads');
    const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
    parentPort.postMessage(tid);
    const end = Date.now() + ${ms};
    if (${JSON.stringify(kind)} === 'spin') { while (Date.now() < end) {} parentPort.postMessage('done'); }
    else setTimeout(() => parentPort.postMessage('done'), ${ms});
  `;
  const thread = new Worker(source, { eval: true });
  return new Promise((resolve) => {
    const done = new Promise<void>((finished) => thread.on('message', (m) => m === 'done' && finished()));
    thread.once('message', (tid: number) => resolve({ tid, done: done.then(() => void thread.terminate()) }));
  });
}

describe.runIf(kernelThreadId() !== 0)('the CPU time of a worker thread', () => {
  it('counts what a spinning thread computes, and almost nothing of a sleeping one', async () => {
    const [spinning, sleeping] = await Promise.all([worker('spin', 600), worker('sleep', 600)]);
    const start = { spin: threadCpuMs(spinning.tid)!, sleep: threadCpuMs(sleeping.tid)! };
    await new Promise((resolve) => setTimeout(resolve, 400));
    const spun = threadCpuMs(spinning.tid)! - start.spin;
    const slept = threadCpuMs(sleeping.tid)! - start.sleep;
    await Promise.all([spinning.done, sleeping.done]);
    // On a loaded machine the spinner gets less than the whole 400 ms; it still gets some, the sleeper none.
    expect(spun).toBeGreaterThanOrEqual(50);
    expect(slept).toBeLessThanOrEqual(20);
  });

  it('is undefined for a thread that is not one of this process', () => {
    expect(threadCpuMs(2 ** 30)).toBeUndefined();
  });
});
