-- Why a submission's completion stopped (issue 12, "a job that cannot succeed stops, records why,
-- and shows it"): the completion job writes the reason when it gives up — at once for a
-- permanent failure (data it can never draw: a damaged image or PDF), after its last retry for a
-- transient one — and clears it when a later run succeeds (src/signing/complete-submission.ts).

-- AlterTable
ALTER TABLE "submissions" ADD COLUMN "completion_error" TEXT,
ADD COLUMN "completion_failed_at" TIMESTAMP(3);
