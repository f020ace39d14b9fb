-- Bulk send (issue 16): many submissions of one template, one per row of a CSV or of JSON rows,
-- created in the background in batches (src/submissions/bulk-send-job.ts). A bulk send keeps its
-- rows (their submitters as mapped from the cells) and what became of each: the submission made
-- from it, or why it was rejected.

-- CreateTable
CREATE TABLE "bulk_sends" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "template_id" INTEGER NOT NULL,
    "created_by_user_id" INTEGER,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "settings" JSONB NOT NULL DEFAULT '{}',
    "rate_per_minute" INTEGER NOT NULL,
    "total_rows" INTEGER NOT NULL,
    "created_count" INTEGER NOT NULL DEFAULT 0,
    "rejected_count" INTEGER NOT NULL DEFAULT 0,
    "invitations_scheduled" INTEGER NOT NULL DEFAULT 0,
    "next_invitation_at" TIMESTAMP(3),
    "error" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,
    "completed_at" TIMESTAMP(3),

    CONSTRAINT "bulk_sends_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bulk_send_rows" (
    "bulk_send_id" INTEGER NOT NULL,
    "row" INTEGER NOT NULL,
    "submitters" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "error" TEXT,
    "submission_id" INTEGER,

    CONSTRAINT "bulk_send_rows_pkey" PRIMARY KEY ("bulk_send_id","row")
);

-- CreateIndex
CREATE INDEX "bulk_sends_account_id_id_idx" ON "bulk_sends"("account_id", "id");

-- CreateIndex
CREATE INDEX "bulk_sends_template_id_idx" ON "bulk_sends"("template_id");

-- CreateIndex
CREATE UNIQUE INDEX "bulk_send_rows_submission_id_key" ON "bulk_send_rows"("submission_id");

-- AddForeignKey
ALTER TABLE "bulk_sends" ADD CONSTRAINT "bulk_sends_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_sends" ADD CONSTRAINT "bulk_sends_template_id_fkey" FOREIGN KEY ("template_id") REFERENCES "templates"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_sends" ADD CONSTRAINT "bulk_sends_created_by_user_id_fkey" FOREIGN KEY ("created_by_user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_send_rows" ADD CONSTRAINT "bulk_send_rows_bulk_send_id_fkey" FOREIGN KEY ("bulk_send_id") REFERENCES "bulk_sends"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_send_rows" ADD CONSTRAINT "bulk_send_rows_submission_id_fkey" FOREIGN KEY ("submission_id") REFERENCES "submissions"("id") ON DELETE SET NULL ON UPDATE CASCADE;
