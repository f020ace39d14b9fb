/**
 * The SQL of reminders (src/submissions/reminders.ts): the reminder scan's due rows (locked, so that
 * instances scanning together share them out), the same facts for one party (the reminder job's
 * check), the scan's decisions written back in one statement, and the upsert that (re)arms the
 * rows of a submission or an account when what decides them changes.
 *
 * Times: the columns are timestamp(3) holding UTC; parameters are ISO 8601 strings, stored AT TIME
 * ZONE 'UTC'; times are read as ISO 8601 strings (iso()).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

type Tx = Pick<Prisma.TransactionClient, '$queryRawUnsafe' | '$executeRawUnsafe'>;

const iso = (column: string) => `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const utc = (parameter: string) => `(${parameter}::timestamptz AT TIME ZONE 'UTC')`;

/** What a reminder decision is made from: a party's row, its contact, and what closes its form. */
export interface ReminderStateRow {
  submitterId: number;
  accountId: number;
  submissionId: number;
  /** ISO 8601, or null before the scan first saw the row. */
  startedAt: string | null;
  sentCount: number;
  lastSentAt: string | null;
  email: string | null;
  phone: string | null;
  /** This party completed or declined. */
  partyDone: boolean;
  /** The submission completed, or any of its parties declined (the form's DECLINED). */
  submissionDone: boolean;
  /** The submission or its template is archived. */
  archived: boolean;
  /** ISO 8601 or null. */
  expireAt: string | null;
  /** The submission's `preferences.reminders` (null: none of its own). */
  ownReminders: unknown;
  /** The account's `preferences.reminders`. */
  accountReminders: unknown;
}

const STATE_COLUMNS = `
  r.submitter_id AS "submitterId", r.account_id AS "accountId", r.submission_id AS "submissionId",
  ${iso('r.started_at')} AS "startedAt", r.sent_count AS "sentCount", ${iso('r.last_sent_at')} AS "lastSentAt",
  x.email, x.phone, x.completed_at IS NOT NULL OR x.declined_at IS NOT NULL AS "partyDone",
  s.completed_at IS NOT NULL
    OR EXISTS (SELECT 1 FROM submitters d WHERE d.submission_id = s.id AND d.declined_at IS NOT NULL)
    AS "submissionDone",
  s.archived_at IS NOT NULL OR t.archived_at IS NOT NULL AS archived, ${iso('s.expire_at')} AS "expireAt",
  s.preferences->'reminders' AS "ownReminders", a.preferences->'reminders' AS "accountReminders"`;

const STATE_FROM = `
  FROM reminder_schedules r
  JOIN submitters x ON x.id = r.submitter_id
  JOIN submissions s ON s.id = r.submission_id
  JOIN templates t ON t.id = s.template_id
  JOIN accounts a ON a.id = r.account_id`;

/**
 * $1 now, $2 how many: the rows due (next_at ≤ now), earliest first, locked for the scan's
 * transaction; rows another scan holds are skipped (it is deciding them).
 */
const SELECT_DUE = `
  SELECT ${STATE_COLUMNS} ${STATE_FROM}
   WHERE r.next_at <= ${utc('$1')}
   ORDER BY r.next_at
   LIMIT $2
     FOR UPDATE OF r SKIP LOCKED`;

/** Locks and reads the due rows (SELECT_DUE), in the scan's transaction. */
export async function lockDueReminders(tx: Tx, now: Date, limit: number): Promise<ReminderStateRow[]> {
  return tx.$queryRawUnsafe<ReminderStateRow[]>(SELECT_DUE, now.toISOString(), limit);
}

/** $1 submitter id: its row's facts (SELECT_DUE's columns), unlocked. */
const READ_STATE = `SELECT ${STATE_COLUMNS} ${STATE_FROM} WHERE r.submitter_id = $1`;

/** One party's facts (READ_STATE), or undefined when it has no row (or no longer exists). */
export async function readReminderState(tx: Tx, submitterId: number): Promise<ReminderStateRow | undefined> {
  const rows = await tx.$queryRawUnsafe<ReminderStateRow[]>(READ_STATE, submitterId);
  return rows[0];
}

/** What the scan decided for one row: its new state. Times ISO 8601 or null. */
export interface ReminderRowUpdate {
  submitterId: number;
  startedAt: string | null;
  sentCount: number;
  lastSentAt: string | null;
  nextAt: string | null;
}

/** $1 the updates as JSON ([ReminderRowUpdate]), $2 now: writes them in one statement. */
const APPLY_UPDATES = `
  UPDATE reminder_schedules r
     SET started_at = u."startedAt" AT TIME ZONE 'UTC', sent_count = u."sentCount",
         last_sent_at = u."lastSentAt" AT TIME ZONE 'UTC', next_at = u."nextAt" AT TIME ZONE 'UTC',
         updated_at = ${utc('$2')}
    FROM jsonb_to_recordset($1::jsonb)
      AS u("submitterId" int, "startedAt" timestamptz, "sentCount" int, "lastSentAt" timestamptz, "nextAt" timestamptz)
   WHERE r.submitter_id = u."submitterId"`;

/** Writes the scan's decisions (APPLY_UPDATES), in its transaction. */
export async function applyReminderUpdates(tx: Tx, updates: readonly ReminderRowUpdate[], now: Date): Promise<void> {
  if (updates.length === 0) return;
  await tx.$executeRawUnsafe(APPLY_UPDATES, JSON.stringify(updates), now.toISOString());
}

/**
 * $1 account, $2 submission or null (every submission of the account), $3 only submissions without
 * reminder settings of their own (those the account's default applies to), $4 now: a row for each
 * party of them that was sent its request and has not completed or declined, due at once, so that
 * the scan judges it again under what changed (settings, an archive undone, an expiry moved). A new
 * row's sequence counts from the party's sent_at (the first reminder is due `first_after_hours`
 * after the request, as for a row made when it was sent); an existing row keeps its progress.
 */
const ARM = `
  INSERT INTO reminder_schedules
              (submitter_id, account_id, submission_id, started_at, next_at, created_at, updated_at)
  SELECT x.id, x.account_id, x.submission_id, x.sent_at, ${utc('$4')}, ${utc('$4')}, ${utc('$4')}
    FROM submitters x
    JOIN submissions s ON s.id = x.submission_id
   WHERE x.account_id = $1 AND ($2::int IS NULL OR x.submission_id = $2)
     AND x.sent_at IS NOT NULL AND x.completed_at IS NULL AND x.declined_at IS NULL AND s.completed_at IS NULL
     AND (NOT $3::boolean OR s.preferences->'reminders' IS NULL)
  ON CONFLICT (submitter_id) DO UPDATE SET next_at = EXCLUDED.next_at, updated_at = EXCLUDED.updated_at`;

/**
 * (Re)arms reminder rows (ARM) in the transaction of the change that calls for it.
 * @param scope.submissionId one submission of the account, or every one
 * @param scope.withoutOwnSettings only submissions whose reminders are the account's default
 */
export async function armReminders(
  tx: Tx,
  scope: { accountId: number; submissionId: number | null; withoutOwnSettings: boolean },
  now: Date,
): Promise<void> {
  await tx.$executeRawUnsafe(ARM, scope.accountId, scope.submissionId, scope.withoutOwnSettings, now.toISOString());
}
