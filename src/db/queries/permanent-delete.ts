/**
 * The SQL of permanent deletes (`DELETE /templates/{id}?permanently=true`,
 * `DELETE /submissions/{id}?permanently=true`; src/templates/delete-records.ts): locking the
 * records, finding every stored file they use, and deleting the stored_files rows nothing else
 * uses, all in the delete's transaction. The bytes go later (src/documents/unused-files.ts).
 *
 * Where a stored file is referenced (prisma/schema.prisma and the code that writes each):
 * - template_documents.file_id (a template's documents; clones and merges share the rows);
 * - document_previews: image_file_id (a page image; one image row is shared by the previews of
 *   every file of the account with the same bytes, src/templates/save-template.ts stageDocument),
 *   of the file file_id (the preview row goes with that file: ON DELETE CASCADE);
 * - completed_documents.file_id (signed documents and the audit log);
 * - submissions.template_schema[].file_id (the submission's copy of its template's documents, JSON:
 *   it keeps a file the template no longer uses after PUT /templates/{id}/documents);
 * - submitters.values (uuids of signer uploads and API-given images and files, JSON), and
 *   stored_files.submitter_id (files uploaded through a signer's form, used or not:
 *   src/signing-form/attachments.ts).
 * A file named by a submitter's values is that submitter's own: the signing form accepts only the
 * signer's uploads or files its values already held (src/signing-form/field-values.ts
 * checkAttachments), and API values store new files (src/submissions/create-submissions.ts), so
 * no other submitter's values are searched. submission_list_items' file uuids are a cache of the
 * submission's own completed documents (deleted with it).
 */
import type { Prisma } from '../../generated/prisma/client.ts';

type Tx = Pick<Prisma.TransactionClient, '$queryRawUnsafe' | '$executeRawUnsafe'>;

/**
 * $1 account, $2 template or null, $3 submission ids: locks the template row, then the
 * submissions (those listed, and every submission of the template), FOR UPDATE, and returns the
 * submissions' ids. Locked first, before anything is read: a signer's write (it locks its
 * submission, ./signing-form.ts), a completion step (its insert's foreign key check) or a new
 * submission of the template (its foreign key check) waits for the delete, and one that went first
 * is seen by the reads that follow.
 */
const LOCK_RECORDS = `
  WITH template AS (SELECT id FROM templates WHERE id = $2 AND account_id = $1 FOR UPDATE)
  SELECT s.id FROM submissions s
   WHERE s.account_id = $1 AND (s.id = ANY($3::int[]) OR s.template_id = (SELECT id FROM template))
   ORDER BY s.id
     FOR UPDATE OF s`;

/**
 * Locks a template (or none) and submissions for a permanent delete (LOCK_RECORDS).
 * @returns the ids of the submissions locked: `submissionIds` of the account, and the template's
 */
export async function lockRecordsForDelete(
  tx: Tx,
  options: { accountId: number; templateId: number | null; submissionIds: number[] },
): Promise<number[]> {
  const rows = await tx.$queryRawUnsafe<{ id: number }[]>(
    LOCK_RECORDS,
    options.accountId,
    options.templateId,
    options.submissionIds,
  );
  return rows.map((r) => r.id);
}

/**
 * $1 account, $2 template or null, $3 submission ids: the ids of the account's stored files the
 * records use (module comment), with the preview images of those files.
 */
const FILES_OF_RECORDS = `
  WITH parties AS (SELECT id, "values" FROM submitters WHERE submission_id = ANY($3::int[])),
  named AS (
    SELECT lower(v.value) AS uuid
      FROM parties p
     CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(p."values") = 'object' THEN p."values" ELSE '{}' END) e
     CROSS JOIN LATERAL jsonb_array_elements_text(
             CASE WHEN jsonb_typeof(e.value) = 'array' THEN e.value ELSE jsonb_build_array(e.value) END) v
     WHERE v.value ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
  used AS (
    SELECT file_id AS id FROM completed_documents WHERE submission_id = ANY($3::int[])
    UNION
    SELECT (d->>'file_id')::int
      FROM submissions s
     CROSS JOIN LATERAL jsonb_array_elements(
             CASE WHEN jsonb_typeof(s.template_schema) = 'array' THEN s.template_schema ELSE '[]' END) d
     WHERE s.id = ANY($3::int[]) AND d->>'file_id' ~ '^[0-9]{1,9}$'
    UNION
    SELECT file_id FROM template_documents WHERE template_id = $2
    UNION
    SELECT f.id FROM stored_files f JOIN named n ON f.uuid = n.uuid::uuid WHERE f.account_id = $1
    UNION
    SELECT f.id FROM stored_files f WHERE f.submitter_id IN (SELECT id FROM parties) AND f.account_id = $1)
  SELECT f.id FROM stored_files f
   WHERE f.account_id = $1
     AND (f.id IN (SELECT id FROM used)
          OR f.id IN (SELECT image_file_id FROM document_previews WHERE file_id IN (SELECT id FROM used)))`;

/** The ids of the account's stored files a template (or none) and submissions use (FILES_OF_RECORDS). */
export async function filesOfRecords(
  tx: Tx,
  options: { accountId: number; templateId: number | null; submissionIds: number[] },
): Promise<number[]> {
  const rows = await tx.$queryRawUnsafe<{ id: number }[]>(
    FILES_OF_RECORDS,
    options.accountId,
    options.templateId,
    options.submissionIds,
  );
  return rows.map((r) => r.id);
}

/**
 * $1 account, $2 template or null, $3 submission ids: deletes the webhook deliveries (and, by
 * cascade, their attempts) of the records' events: the template's, the submissions' and their
 * submitters'. Their payloads hold the records' data; a pending one is not sent.
 */
const DELETE_DELIVERIES = `
  DELETE FROM webhook_deliveries
   WHERE account_id = $1
     AND ((record_type = 'Template' AND record_id = $2)
          OR (record_type = 'Submission' AND record_id = ANY($3::int[]))
          OR (record_type = 'Submitter'
              AND record_id IN (SELECT id FROM submitters WHERE submission_id = ANY($3::int[]))))`;

/** Deletes the webhook deliveries of a template's (or none) and submissions' events (DELETE_DELIVERIES). */
export async function deleteDeliveriesOfRecords(
  tx: Tx,
  options: { accountId: number; templateId: number | null; submissionIds: number[] },
): Promise<void> {
  await tx.$executeRawUnsafe(DELETE_DELIVERIES, options.accountId, options.templateId, options.submissionIds);
}

/**
 * $1 account, $2 stored file ids: deletes those of the account that nothing references any more
 * (module comment: template documents, preview images of files that stay, completed documents,
 * the account's submissions' template_schema) and returns their storage keys and SHA-256. A
 * preview image whose file is deleted by the same statement is still referenced for it (the
 * statement's snapshot): run it again to delete those (deleteUnusedFiles does).
 */
const DELETE_UNUSED_FILES = `
  DELETE FROM stored_files f
   WHERE f.id = ANY($2::int[]) AND f.account_id = $1
     AND NOT EXISTS (SELECT 1 FROM template_documents d WHERE d.file_id = f.id)
     AND NOT EXISTS (SELECT 1 FROM completed_documents c WHERE c.file_id = f.id)
     AND NOT EXISTS (SELECT 1 FROM document_previews p WHERE p.image_file_id = f.id)
     AND NOT EXISTS (
           SELECT 1 FROM submissions s
            CROSS JOIN LATERAL jsonb_array_elements(
                    CASE WHEN jsonb_typeof(s.template_schema) = 'array' THEN s.template_schema ELSE '[]' END) d
            WHERE s.account_id = $1 AND d->>'file_id' = f.id::text)
  RETURNING f.storage_key AS key, f.sha256`;

/** A storage key whose last row was deleted, and the SHA-256 its rows carried. */
export interface FreedKey {
  key: string;
  sha256: string;
}

/**
 * Deletes the stored_files rows among `fileIds` (of the account) that nothing references any
 * more (DELETE_UNUSED_FILES, twice: files, then the preview images only they used).
 * @returns the storage keys of the rows deleted, each once (other rows may still use a key)
 */
export async function deleteUnusedStoredFiles(tx: Tx, accountId: number, fileIds: number[]): Promise<FreedKey[]> {
  if (fileIds.length === 0) return [];
  const freed = new Map<string, FreedKey>();
  for (let pass = 0; pass < 2; pass++) {
    const rows = await tx.$queryRawUnsafe<FreedKey[]>(DELETE_UNUSED_FILES, accountId, fileIds);
    for (const row of rows) freed.set(row.key, row);
  }
  return [...freed.values()];
}
