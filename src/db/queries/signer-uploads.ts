/**
 * The SQL of signers' uploads (stored_files rows with a `submitter_id`,
 * src/signing-form/attachments.ts): the quota's count under the
 * submitter's row lock, and the sweep of uploads no value uses
 * (src/signing-form/sweep-signer-uploads.ts; docs/security.md "Signer uploads").
 *
 * Why the quota locks a row and counts in a second statement: two uploads of one signer at once
 * would each count the stored rows without the other's and both pass. Each takes the submitter's
 * row lock (FOR NO KEY UPDATE) in the transaction that inserts its row, so they count one after
 * the other; and the count is its own statement because under READ COMMITTED a statement's
 * snapshot is taken when it starts, before it waits for a lock: a count in the locking statement
 * would miss the row of the upload it waited for.
 *
 * Times: the columns are timestamp(3) holding UTC; parameters are ISO 8601 strings, read AT TIME
 * ZONE 'UTC' (as ./reminders.ts).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

type Tx = Pick<Prisma.TransactionClient, '$queryRawUnsafe'>;

const utc = (parameter: string) => `(${parameter}::timestamptz AT TIME ZONE 'UTC')`;

/** What a signer has uploaded so far. */
export interface SignerUploadTotals {
  files: number;
  bytes: number;
}

/** $1 submitter id: the number and total size of the signer's uploads (index stored_files_submitter_id_idx). */
const COUNT_UPLOADS = `
  SELECT count(*)::int AS files, COALESCE(sum(byte_size), 0)::float8 AS bytes
    FROM stored_files WHERE submitter_id = $1`;

/** The number and total size in bytes of a signer's uploads, as of the statement (no lock). */
export async function countSignerUploads(tx: Tx, submitterId: number): Promise<SignerUploadTotals> {
  const [row] = await tx.$queryRawUnsafe<SignerUploadTotals[]>(COUNT_UPLOADS, submitterId);
  return { files: row?.files ?? 0, bytes: row?.bytes ?? 0 };
}

/**
 * Inside the transaction that inserts an upload's row: locks the submitter's row (FOR NO KEY
 * UPDATE, until the transaction ends), then counts its uploads (module comment). The lock is the
 * one the form's changes take on that row (./signing-form.ts), without the submission's before it:
 * the upload locks nothing after it but its own insert, so it cannot close a cycle with them.
 * @returns the totals with every committed upload of the signer counted, or null when the
 *   submitter no longer exists
 */
export async function lockAndCountSignerUploads(tx: Tx, submitterId: number): Promise<SignerUploadTotals | null> {
  const locked = await tx.$queryRawUnsafe<{ id: number }[]>(
    'SELECT id FROM submitters WHERE id = $1 FOR NO KEY UPDATE',
    submitterId,
  );
  if (locked.length === 0) return null;
  return countSignerUploads(tx, submitterId);
}

/** An upload the sweep should look at, and whose form it belongs to. */
export interface DueSignerUpload {
  fileId: number;
  submitterId: number;
  /** Null when the submitter no longer exists (its submission was deleted while the upload was stored). */
  submissionId: number | null;
}

/**
 * $1 now, $2 the age cutoff (now − SIGNER_UPLOADS_UNUSED_HOURS), $3 after this id, $4 how many, by
 * id (a sweep pages through them, so it reads each once whatever it decides): uploads the sweep
 * has not settled (upload_sweep_at set) whose form may be closed — this party completed or
 * declined; the submission completed, declined by any party, archived, or past expire_at; its
 * template archived; the submitter gone — or whose age counts from before the cutoff. A superset
 * read without locks: the sweep decides each form under its locks (formStateOf,
 * src/signing-form/form-state.ts), in the statement of SWEEP.
 */
const DUE_UPLOADS = `
  SELECT f.id AS "fileId", f.submitter_id AS "submitterId", x.submission_id AS "submissionId"
    FROM stored_files f
    LEFT JOIN submitters x ON x.id = f.submitter_id
    LEFT JOIN submissions s ON s.id = x.submission_id
    LEFT JOIN templates t ON t.id = s.template_id
   WHERE f.upload_sweep_at IS NOT NULL AND f.submitter_id IS NOT NULL AND f.id > $3
     AND (f.upload_sweep_at <= ${utc('$2')}
          OR x.id IS NULL
          OR x.completed_at IS NOT NULL OR x.declined_at IS NOT NULL
          OR s.completed_at IS NOT NULL OR s.archived_at IS NOT NULL OR t.archived_at IS NOT NULL
          OR s.expire_at <= ${utc('$1')}
          OR EXISTS (SELECT 1 FROM submitters d WHERE d.submission_id = s.id AND d.declined_at IS NOT NULL))
   ORDER BY f.id
   LIMIT $4`;

/** Uploads the sweep should look at (DUE_UPLOADS): at most `limit`, of ids above `afterId`, by id. */
export function dueSignerUploads(
  tx: Tx,
  options: { now: Date; cutoff: Date; afterId: number; limit: number },
): Promise<DueSignerUpload[]> {
  return tx.$queryRawUnsafe<DueSignerUpload[]>(
    DUE_UPLOADS,
    options.now.toISOString(),
    options.cutoff.toISOString(),
    options.afterId,
    options.limit,
  );
}

/**
 * $1 the uploads' ids, $2 their submitter's id, $3 whether its form is closed, $4 the age cutoff,
 * $5 now. Run under the submission's and submitter's row locks (the ones every change of values
 * takes), so its snapshot, taken after them, sees every value saved before; a value saved after
 * waits for this transaction and then finds a removed upload gone ("Unknown attachment").
 * Of the uploads still unsettled and due (the form closed, or the age counted from before the
 * cutoff), one statement:
 * - keeps those in use: named anywhere in the values of a party of the submission (as text: any
 *   nesting, any case), or used by a completed document, a template document or a page preview;
 *   settled for good (upload_sweep_at NULL) when the form is closed, else counted from now;
 * - deletes the others, returning their storage keys and SHA-256 (the bytes go by the
 *   delete-unused-files job, once no row uses them).
 * An upload already settled, deleted or counted from after the cutoff (another sweep went first)
 * is left as it is.
 */
const SWEEP = `
  WITH due AS (
    SELECT f.id, f.uuid::text AS uuid FROM stored_files f
     WHERE f.id = ANY($1::int[]) AND f.upload_sweep_at IS NOT NULL AND f.submitter_id = $2::int
       AND ($3::boolean OR f.upload_sweep_at <= ${utc('$4')})
  ),
  used AS (
    SELECT d.id FROM due d
     WHERE EXISTS (SELECT 1 FROM submitters p
                    WHERE p.submission_id = (SELECT submission_id FROM submitters WHERE id = $2::int)
                      AND strpos(lower(p."values"::text), d.uuid) > 0)
        OR EXISTS (SELECT 1 FROM completed_documents c WHERE c.file_id = d.id)
        OR EXISTS (SELECT 1 FROM template_documents t WHERE t.file_id = d.id)
        OR EXISTS (SELECT 1 FROM document_previews v WHERE v.file_id = d.id OR v.image_file_id = d.id)
  ),
  kept AS (
    UPDATE stored_files f SET upload_sweep_at = CASE WHEN $3::boolean THEN NULL ELSE ${utc('$5')} END
     WHERE f.id IN (SELECT id FROM used)
  )
  DELETE FROM stored_files f
   WHERE f.id IN (SELECT id FROM due) AND f.id NOT IN (SELECT id FROM used)
  RETURNING f.storage_key AS key, f.sha256`;

/**
 * Sweeps one signer's due uploads (SWEEP), under the locks its comment names.
 * @returns the storage keys (with SHA-256) of the rows deleted
 */
export function sweepSignerUploads(
  tx: Tx,
  options: { fileIds: number[]; submitterId: number; closed: boolean; cutoff: Date; now: Date },
): Promise<{ key: string; sha256: string }[]> {
  return tx.$queryRawUnsafe<{ key: string; sha256: string }[]>(
    SWEEP,
    options.fileIds,
    options.submitterId,
    options.closed,
    options.cutoff.toISOString(),
    options.now.toISOString(),
  );
}
