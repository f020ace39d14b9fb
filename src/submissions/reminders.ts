/**
 * Reminders to parties who were sent a signature request and have not completed (issue 16;
 * docs/reminders.md): the first `first_after_hours` after the request, then every `every_hours`,
 * at most `max_count` times, by email and/or SMS (the settings and the timing rule:
 * src/notifications/reminder-settings.ts). They stop when the party completes or declines, or the
 * submission is completed, declined, archived (or its template) or expired, and start again when
 * the party's email or phone changes.
 *
 * Scheduled through the outbox (src/jobs/outbox.ts), so that a restart neither loses nor doubles
 * one, in three steps:
 * 1. startReminders: once a party's request has been sent (the request job, send-requests.ts) and
 *    reminders are asked for, the party gets a `reminder_schedules` row, its sequence counted from
 *    then. Settings given later, an archive undone or an expiry moved (re)arm the rows of the
 *    parties already sent (armSubmissionReminders, and the account's default:
 *    src/accounts/account-preferences.ts); a row made so counts from the party's sent_at.
 * 2. The reminder scan (scanReminders; every REMINDER_SCAN_SECONDS on each instance, ReminderScanner)
 *    locks the rows that are due and judges each by the clock (decideReminder): stop, wait until
 *    the next reminder is due, or record reminder n. In the same transaction it records one
 *    `send-reminder` job per address, keyed by (submitter, n, channel, address), and moves the row
 *    on. A scan killed before its commit leaves the row due for the next; one killed after leaves
 *    the jobs in the outbox, which the next start moves into the job store.
 * 3. The `send-reminder` job checks again that the reminder is still wanted (the party's form still
 *    open, the address unchanged, the settings still asking for it), so one that runs after a
 *    completion, decline, archive or expiry does nothing, then sends the request message again
 *    (request-messages.ts) under the dedupe key `reminder:<submitter>:<n>:<address>`: a job run
 *    twice sends once. The send is recorded as a `send_reminder_email` (DocuSeal's event type) or
 *    `send_reminder_sms` (Signet's) submission event, which the audit log prints.
 *
 * Time is read from a Clock (src/util/clock.ts) passed in by the service, so tests move it.
 */
import type { Db } from '../db/client.ts';
import { logOutageOnce } from '../db/unavailable.ts';
import {
  applyReminderUpdates,
  armReminders,
  lockDueReminders,
  type ReminderRowUpdate,
  type ReminderStateRow,
  readReminderState,
} from '../db/queries/reminders.ts';
import { readSignatureRequest, type SignatureRequestRow } from '../db/queries/signature-requests.ts';
import type { SideEffects } from '../events/events.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import type { NotificationLogger } from '../notifications/delivery-error.ts';
import {
  effectiveReminders,
  type ReminderAddress,
  reminderAddresses,
  reminderDueAt,
  type Reminders,
} from '../notifications/reminder-settings.ts';
import type { Clock } from '../util/clock.ts';
import { sendRetry } from '../notifications/delivery-error.ts';
import { abandonRequestMessage, deliverRequestMessage, type SendDeps } from './request-messages.ts';

export const SEND_REMINDER_JOB = 'send-reminder';

/** One reminder to one address: what the job receives. */
export interface SendReminderJob {
  submitterId: number;
  /** Its number in the party's sequence, from 1. */
  number: number;
  channel: ReminderAddress['channel'];
  /** The email or phone it was recorded for; the job sends nothing if the party's has changed. */
  to: string;
}

/** What a reminder's delivery records on the submission (src/db/queries/notification-events.ts). */
const REMINDER_EVENTS = {
  email: { submissionEvent: 'send_reminder_email', failureEvent: 'fail_email' },
  sms: { submissionEvent: 'send_reminder_sms', failureEvent: 'fail_sms' },
} as const;

/** The outbox key of one reminder: its party, number and address (email and SMS are separate tables). */
export const reminderDedupeKey = (job: Pick<SendReminderJob, 'submitterId' | 'number' | 'to'>) =>
  `reminder:${job.submitterId}:${job.number}:${job.to}`;

/** Rows one scan transaction decides (and locks) at most. */
const SCAN_BATCH = 100;

/**
 * A party's reminder row as a decision reads it: progress, contact, what closes its form, and the
 * settings that apply (the submission's own, else the account's default).
 */
interface ReminderState {
  submitterId: number;
  startedAt: Date | null;
  sentCount: number;
  lastSentAt: Date | null;
  email: string | null;
  phone: string | null;
  partyDone: boolean;
  submissionDone: boolean;
  archived: boolean;
  expireAt: Date | null;
  reminders: Reminders | null;
}

const date = (value: string | null) => (value === null ? null : new Date(value));

function stateOf(row: ReminderStateRow): ReminderState {
  return {
    submitterId: row.submitterId,
    startedAt: date(row.startedAt),
    sentCount: row.sentCount,
    lastSentAt: date(row.lastSentAt),
    email: row.email,
    phone: row.phone,
    partyDone: row.partyDone,
    submissionDone: row.submissionDone,
    archived: row.archived,
    expireAt: date(row.expireAt),
    reminders: effectiveReminders(row.ownReminders, row.accountReminders),
  };
}

/**
 * Why the party's form no longer takes a signature, or null while it does: the states of
 * src/signing-form/form-state.ts formStateOf (completed, declined, archived, expired at `now`),
 * in the words a reminder's record gives.
 */
function closedReason(state: ReminderState, now: Date): string | null {
  if (state.partyDone) return 'the party had completed or declined the form';
  if (state.submissionDone) return 'the submission was completed or declined';
  if (state.archived) return 'the submission or its template was archived';
  if (state.expireAt && state.expireAt.getTime() <= now.getTime()) return 'the submission had expired';
  return null;
}

/** What the scan does with a due row: its new state, and the reminder jobs to record (if any). */
interface ReminderDecision {
  update: ReminderRowUpdate;
  jobs: OutboxJob[];
}

/**
 * Judges one due row at `now`: a closed form or no reminders asked for (or none left, or no
 * address to send to) stops it (next_at null, until something arms it again); a reminder not yet
 * due makes it wait until then; a due reminder n is recorded, one job per address, and the row
 * waits for reminder n + 1. A row the scan sees first starts its sequence now.
 */
function decideReminder(state: ReminderState, now: Date): ReminderDecision {
  const startedAt = state.startedAt ?? now;
  const keep = {
    submitterId: state.submitterId,
    startedAt: startedAt.toISOString(),
    sentCount: state.sentCount,
    lastSentAt: state.lastSentAt?.toISOString() ?? null,
  };
  const stop: ReminderDecision = { update: { ...keep, nextAt: null }, jobs: [] };
  if (closedReason(state, now) || !state.reminders) return stop;
  const progress = { startedAt, sentCount: state.sentCount, lastSentAt: state.lastSentAt };
  const due = reminderDueAt(state.reminders, progress);
  if (!due) return stop;
  if (due.getTime() > now.getTime()) return { update: { ...keep, nextAt: due.toISOString() }, jobs: [] };
  const addresses = reminderAddresses(state.reminders, state);
  if (addresses.length === 0) return stop;
  const number = state.sentCount + 1;
  const next = reminderDueAt(state.reminders, { startedAt, sentCount: number, lastSentAt: now });
  return {
    update: { ...keep, sentCount: number, lastSentAt: now.toISOString(), nextAt: next?.toISOString() ?? null },
    jobs: addresses.map(
      (address): OutboxJob => ({
        name: SEND_REMINDER_JOB,
        data: { submitterId: state.submitterId, number, ...address } satisfies SendReminderJob,
        uniqueKey: `${state.submitterId}:${number}:${address.channel}:${address.to}`,
      }),
    ),
  };
}

/** What the scan needs. */
export interface ReminderScanDeps {
  db: Db;
  effects: Pick<SideEffects, 'transaction'>;
  clock: Clock;
}

/**
 * One reminder scan: the due rows, a batch per transaction until none is left (rows another
 * instance's scan holds are left to it), each decided at the clock's now (decideReminder) and its
 * jobs recorded in the outbox with the row's new state.
 * @returns the reminder jobs recorded (one per address)
 */
export async function scanReminders(deps: ReminderScanDeps): Promise<number> {
  let recorded = 0;
  for (;;) {
    const now = deps.clock.now();
    const batch = await deps.effects.transaction(async (tx, effects) => {
      const rows = await lockDueReminders(tx, now, SCAN_BATCH);
      const decisions = rows.map((row) => decideReminder(stateOf(row), now));
      await applyReminderUpdates(
        tx,
        decisions.map((d) => d.update),
        now,
      );
      for (const decision of decisions) effects.jobs.push(...decision.jobs);
      return { rows: rows.length, jobs: decisions.reduce((n, d) => n + d.jobs.length, 0) };
    });
    recorded += batch.jobs;
    if (batch.rows < SCAN_BATCH) return recorded;
  }
}

/** The reminder scan of one instance, on a timer. */
export interface ReminderScanner {
  /** Starts scanning every interval (idempotent). */
  start(): void;
  /** Runs one scan now, after any in progress, as the timer does; resolves to the jobs it recorded. */
  scan(): Promise<number>;
  /** Stops the timer and waits for a scan in progress. */
  stop(): Promise<void>;
}

/**
 * The scanner of scanReminders. A timer scan that fails (the database away) is logged, once per
 * outage, and the next one tries again; scans of one instance never overlap.
 * @param deps.intervalMs milliseconds between scans (REMINDER_SCAN_SECONDS)
 */
export function createReminderScanner(
  deps: ReminderScanDeps & { intervalMs: number; logger: NotificationLogger },
): ReminderScanner {
  let timer: NodeJS.Timeout | undefined;
  // The scan in progress (or waiting for the one before), settled either way.
  let running: Promise<void> | undefined;
  const logError = logOutageOnce((object, message) => deps.logger.error(object, message));
  const scan = (): Promise<number> => {
    const next = (running ?? Promise.resolve()).then(() => scanReminders(deps));
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    running = settled;
    void settled.then(() => {
      if (running === settled) running = undefined;
    });
    return next;
  };
  return {
    start() {
      timer ??= setInterval(() => {
        if (running) return;
        scan().catch((error: unknown) => logError(error, 'reminders: the scan failed; the next one will try again'));
      }, deps.intervalMs);
      timer.unref();
    },
    scan,
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}

/**
 * Starts a party's reminders once its request has been sent, when its submission (or else its
 * account) asks for them: its reminder_schedules row, its sequence started now and due at once
 * (the scan then sets when the first reminder is due). Idempotent: an existing row (the request's
 * other channel, a re-run, a re-send) is kept.
 */
export async function startReminders(
  deps: { db: Db; clock: Clock },
  request: Pick<
    SignatureRequestRow,
    'id' | 'accountId' | 'submissionId' | 'submissionPreferences' | 'accountReminders'
  >,
): Promise<void> {
  const reminders = effectiveReminders(request.submissionPreferences?.reminders, request.accountReminders);
  if (!reminders || reminders.max_count === 0) return;
  const now = deps.clock.now();
  await deps.db.reminderSchedule.createMany({
    data: [
      {
        submitterId: request.id,
        accountId: request.accountId,
        submissionId: request.submissionId,
        startedAt: now,
        nextAt: now,
      },
    ],
    skipDuplicates: true,
  });
}

/**
 * In the transaction of a change of a party's email or phone: its reminders start again, from
 * reminder 1 counted from `now` (a reminder number already sent to an address that did not change
 * is not sent to it again: the keys name the address). Nothing for a party without reminders under way.
 * @param now the change's time by the reminders' clock
 */
export async function restartReminders(
  tx: Pick<Prisma.TransactionClient, 'reminderSchedule'>,
  submitterId: number,
  now: Date,
): Promise<void> {
  await tx.reminderSchedule.updateMany({
    where: { submitterId },
    data: { startedAt: now, sentCount: 0, lastSentAt: null, nextAt: now },
  });
}

/**
 * In the transaction of a change of what decides a submission's reminders (its settings, an
 * archive undone, its expiry): every party already sent its request and still to sign is judged
 * again by the next scan (armReminders).
 */
export async function armSubmissionReminders(
  tx: Pick<Prisma.TransactionClient, '$queryRawUnsafe' | '$executeRawUnsafe'>,
  submission: { accountId: number; id: number },
  now: Date,
): Promise<void> {
  await armReminders(
    tx,
    { accountId: submission.accountId, submissionId: submission.id, withoutOwnSettings: false },
    now,
  );
}

/** Registers the reminder job on a queue (every instance that should run it). */
export function defineReminderJobs(queue: JobQueue, deps: SendDeps): void {
  queue.define<SendReminderJob>(SEND_REMINDER_JOB, (job, run) => sendReminder(deps, job, run.id), {
    retry: sendRetry(deps.config.sendRetryBase),
  });
}

/**
 * Why reminder `job` is no longer wanted, or null when it is: the party's form closed (at the
 * clock's now), the address changed, or the settings no longer ask for it (turned off, the
 * channel dropped, max_count lowered below its number).
 */
function staleReason(state: ReminderState | undefined, job: SendReminderJob, now: Date): string | null {
  if (!state) return 'the party no longer exists';
  const closed = closedReason(state, now);
  if (closed) return closed;
  const current = job.channel === 'email' ? state.email : state.phone;
  if (current !== job.to) return `the party's ${job.channel === 'email' ? 'email' : 'phone'} changed`;
  const reminders = state.reminders;
  if (!reminders || job.number > reminders.max_count) return 'the reminder settings no longer ask for it';
  if (!(job.channel === 'email' ? reminders.send_email : reminders.send_sms))
    return `reminders by ${job.channel === 'email' ? 'email' : 'SMS'} were turned off`;
  return null;
}

/**
 * One reminder to one address: sent as the request message again, once per dedupe key, unless it
 * is no longer wanted (staleReason), when a message of it waiting for a retry is given up with the reason.
 * @throws DeliveryError (retryable) when the provider failed, or another worker holds the message
 */
async function sendReminder(deps: SendDeps, job: SendReminderJob, runId: string): Promise<void> {
  const { db } = deps;
  const message = {
    channel: job.channel,
    dedupeKey: reminderDedupeKey(job),
    kind: 'reminder',
    events: REMINDER_EVENTS[job.channel],
    runId,
  };
  const now = deps.clock.now();
  const row = await readReminderState(db, job.submitterId);
  const stale = staleReason(row ? stateOf(row) : undefined, job, now);
  if (stale) {
    deps.logger.info({ submitterId: job.submitterId, number: job.number, reason: stale }, 'reminder not sent');
    await abandonRequestMessage(db, message, stale, now);
    return;
  }
  const request = await readSignatureRequest(db, job.submitterId);
  if (!request) return;
  await deliverRequestMessage(deps, request, message);
}
