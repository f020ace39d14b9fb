/**
 * A thread's CPU time on Linux, for the parse pool's time limit (issue 23: "a CPU-time limit … per
 * task"): a worker's task is stopped when the CPU time it used passes PARSE_TIMEOUT_SECONDS, not its
 * time on the clock, so that a task that waits for a core on a busy machine (the workers run at a
 * lower priority than the event loop) is not taken for a hostile one.
 *
 * Read from procfs (proc(5)): `/proc/<pid>/task/<tid>/stat`, fields 14 and 15 (utime, stime) in clock
 * ticks of USER_HZ, which Linux fixes at 100 per second for what it shows userspace. Node has no
 * per-thread CPU clock on 22.15 (`worker.cpuUsage()` came later), and its process-wide
 * `process.cpuUsage()` counts every thread. Where there is no procfs, the pool measures the clock
 * instead (kernelThreadId 0).
 */
import { readFileSync, readlinkSync } from 'node:fs';

/** Linux's USER_HZ: clock ticks per second in /proc's CPU times. */
const TICKS_PER_SECOND = 100;

/** The calling thread's id in the kernel (/proc/thread-self is `<pid>/task/<tid>`); 0 without procfs. */
export function kernelThreadId(): number {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop()) || 0;
  } catch {
    return 0;
  }
}

/**
 * CPU time (user + system) the thread `tid` of this process has used, in milliseconds, 10 ms steps.
 * @returns undefined when the thread is gone or procfs cannot be read
 */
export function threadCpuMs(tid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${tid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: fields 3 on follow the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[14 - 3]) + Number(fields[15 - 3]);
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
}
