/**
 * Agenda logs through `debug` (DEBUG=agenda:*), and calls its extend() at every step of every
 * job (a new logger each time, enabled or not). Each new logger decides whether to colour its
 * output, which, unless DEBUG_COLORS says, asks the OS whether stderr is a terminal (an isatty
 * system call): a few percent of the service's CPU in a job burst (bench/submissions.ts, issue 4).
 * This decides it once, as debug itself would now, for the `debug` instance Agenda loads.
 */
import { createRequire } from 'node:module';
import tty from 'node:tty';

/** Sets debug's colour choice for Agenda's instance unless DEBUG_COLORS set it. Best effort: never throws. */
export function settleAgendaDebugColors(): void {
  try {
    const fromAgenda = createRequire(import.meta.resolve('agenda'));
    const debug = fromAgenda('debug') as { inspectOpts?: Record<string, unknown> };
    if (debug.inspectOpts && !('colors' in debug.inspectOpts)) debug.inspectOpts.colors = tty.isatty(process.stderr.fd);
  } catch {
    // Another layout or loader (e.g. no import.meta.resolve): debug keeps deciding per logger.
  }
}
