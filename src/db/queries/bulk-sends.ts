/**
 * The statements of bulk sends (src/submissions/create-bulk-send.ts, bulk-send-job.ts): a bulk
 * send's rows written in one statement, its row locked for a batch, and a batch's row outcomes
 * written in one statement. Plain SQL because each is one statement for thousands of rows (or
 * needs `FOR UPDATE`), where Prisma would send a statement per row.
 */
import type { Prisma } from '../../generated/prisma/client.ts';

/**
 * $1 the bulk send, $2 a JSON array of each row's submitters, in row order: rows 1, 2, … of the
 * bulk send, pending.
 */
const INSERT_ROWS = `
  INSERT INTO bulk_send_rows (bulk_send_id, "row", submitters)
  SELECT $1::int, x.n::int, x.s
    FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(s, n)`;

/** Writes a bulk send's rows (in the caller's transaction). @param submitters each row's, in order */
export async function insertBulkSendRows(
  tx: Pick<Prisma.TransactionClient, '$executeRawUnsafe'>,
  bulkSendId: number,
  submitters: readonly unknown[],
): Promise<void> {
  await tx.$executeRawUnsafe(INSERT_ROWS, bulkSendId, JSON.stringify(submitters));
}

/** A bulk send as a batch reads it under its row lock. */
export interface LockedBulkSend {
  status: string;
  ratePerMinute: number;
  invitationsScheduled: number;
  /** ISO 8601, or null before the first invitation. */
  nextInvitationAt: string | null;
}

/**
 * $1 the bulk send: its row, locked until the transaction ends. Batches of one bulk send take it
 * first, so two runs of a batch (a job retried, or taken back from a dead instance while the first
 * still runs) write one after the other, and the second sees the first's rows done.
 */
const LOCK_BULK_SEND = `
  SELECT status, rate_per_minute AS "ratePerMinute", invitations_scheduled AS "invitationsScheduled",
         to_char(next_invitation_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "nextInvitationAt"
    FROM bulk_sends WHERE id = $1 FOR UPDATE`;

/** Locks a bulk send's row in the caller's transaction (LOCK_BULK_SEND); undefined when it is gone. */
export async function lockBulkSend(
  tx: Pick<Prisma.TransactionClient, '$queryRawUnsafe'>,
  bulkSendId: number,
): Promise<LockedBulkSend | undefined> {
  const rows = await tx.$queryRawUnsafe<LockedBulkSend[]>(LOCK_BULK_SEND, bulkSendId);
  return rows[0];
}

/** What became of one row of a batch. */
export interface BulkSendRowOutcome {
  row: number;
  status: 'created' | 'rejected';
  error?: string | undefined;
  submissionId?: number | undefined;
}

/**
 * $1 the bulk send, $2 a JSON array of BulkSendRowOutcome: each row still pending gets its outcome.
 * Returns how many rows changed.
 */
const RECORD_OUTCOMES = `
  UPDATE bulk_send_rows r
     SET status = x.status, error = x.error, submission_id = x."submissionId"
    FROM jsonb_to_recordset($2::jsonb) AS x("row" int, status text, error text, "submissionId" int)
   WHERE r.bulk_send_id = $1 AND r."row" = x."row" AND r.status = 'pending'`;

/** Records a batch's outcomes (in the caller's transaction). @returns the rows changed */
export function recordBulkSendOutcomes(
  tx: Pick<Prisma.TransactionClient, '$executeRawUnsafe'>,
  bulkSendId: number,
  outcomes: readonly BulkSendRowOutcome[],
): Promise<number> {
  return tx.$executeRawUnsafe(RECORD_OUTCOMES, bulkSendId, JSON.stringify(outcomes));
}
