-- Signer uploads (issue 23): the files a signer uploads through the signing form
-- (POST /api/attachments, src/signing-form/attachments.ts) are bounded per signer, and those no
-- value uses are removed by the sweep (src/signing-form/sweep-signer-uploads.ts).

-- The time the sweep counts an upload's age from: its creation, then each sweep that found it in
-- use in a form still open. NULL: not a signer upload, or an upload kept for good (in use when its
-- form closed). Uploads made before this migration start from their creation.
ALTER TABLE "stored_files" ADD COLUMN "upload_sweep_at" TIMESTAMP(3);
UPDATE "stored_files" SET "upload_sweep_at" = "created_at" WHERE "metadata"->>'source' = 'signing_form';

-- The uploads the sweep looks at (few: those of forms still open, and of forms closed since its last run).
CREATE INDEX "stored_files_upload_sweep_at_idx" ON "stored_files"("upload_sweep_at")
  WHERE "upload_sweep_at" IS NOT NULL;

-- A signer's uploads, counted under the submitter's row lock before each new one (the quota).
CREATE INDEX "stored_files_signer_uploads_idx" ON "stored_files"(("metadata"->>'submitter_id'))
  WHERE "metadata"->>'source' = 'signing_form';
