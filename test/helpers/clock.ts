/**
 * Clocks tests move forward (src/util/clock.ts), handed to the service as buildApp's `clock`
 * (startTestApp's `clock` option, or the test-only entry test/helpers/clock-service.ts), so that
 * reminders due in hours come due at once: the machine's time plus an offset the test advances.
 */
import fs from 'node:fs';
import type { Clock } from '../../src/util/clock.ts';

export interface TestClock extends Clock {
  /** Moves the clock forward by `hours` (fractions allowed). */
  advanceHours(hours: number): void;
  /** How far ahead of the machine's time it is, in milliseconds. */
  readonly offsetMs: number;
}

const HOUR_MS = 3_600_000;

/** A clock in this process: the machine's time plus what advanceHours added. */
export function createTestClock(): TestClock {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advanceHours(hours) {
      offsetMs += Math.round(hours * HOUR_MS);
    },
    get offsetMs() {
      return offsetMs;
    },
  };
}

/**
 * A clock shared with a child process through a file holding the offset in milliseconds (the
 * child reads it with fileClock at every now()); the test writes it with setFileClockHours.
 */
export function fileClock(file: string): Clock {
  return {
    now() {
      const offset = Number(fs.readFileSync(file, 'utf8').trim() || '0');
      return new Date(Date.now() + (Number.isFinite(offset) ? offset : 0));
    },
  };
}

/** Sets the offset of a file clock to `hours` ahead of the machine's time. */
export function setFileClockHours(file: string, hours: number): void {
  fs.writeFileSync(file, String(Math.round(hours * HOUR_MS)));
}
