-- Signer uploads (issue 23): the files a signer uploads through the signing form
-- (POST /api/attachments, src/signing-form/attachments.ts) are bounded per signer, and those no
-- value uses are removed by the sweep (src/signing-form/sweep-signer-uploads.ts).

-- The signer whose form uploaded the file: was `metadata.submitter_id` (with `metadata.source`
-- "signing_form"), now a column its quota counts by, through an index. Not a foreign key: a
-- permanent delete removes the rows with their submitter's, and the sweep removes one left behind.
-- The time the sweep counts an upload's age from: its creation, then each sweep that found it in
-- use in a form still open; NULL for other files, and for uploads in use when their form closed
-- (kept for good). Uploads made before this migration count from their creation.
ALTER TABLE "stored_files" ADD COLUMN "submitter_id" INTEGER,
                           ADD COLUMN "upload_sweep_at" TIMESTAMP(3);
UPDATE "stored_files"
   SET "submitter_id" = ("metadata"->>'submitter_id')::int,
       "upload_sweep_at" = "created_at",
       "metadata" = "metadata" - 'submitter_id' - 'source'
 WHERE "metadata"->>'source' = 'signing_form' AND "metadata"->>'submitter_id' ~ '^[0-9]{1,9}$';

-- CreateIndex
CREATE INDEX "stored_files_submitter_id_idx" ON "stored_files"("submitter_id");

-- CreateIndex
CREATE INDEX "stored_files_upload_sweep_at_idx" ON "stored_files"("upload_sweep_at");
