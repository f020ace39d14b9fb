/**
 * Test-only entry: the service started exactly as `npm start` starts it (main.ts startSignet) on
 * DATABASE_URL, with a clock the test moves (test/helpers/clock.ts fileClock): reminders due in
 * hours come due when the test writes a larger offset into CLOCK_FILE, with no restart. Used by
 * test/reminders-restart.test.ts, which kills this process with SIGKILL. Run with
 * `node --import tsx test/helpers/clock-service.ts` (startService's `entry` option). CLOCK_FILE is
 * read here only; the service itself has no such setting.
 */
import { startSignet } from '../../main.ts';
import { fileClock } from './clock.ts';

// Without it startSignet would start an embedded PostgreSQL, which these tests never want.
if (!process.env.DATABASE_URL) throw new Error('clock-service: DATABASE_URL is required');
const file = process.env.CLOCK_FILE;
if (!file) throw new Error('clock-service: CLOCK_FILE is required');

await startSignet({ clock: fileClock(file) });
