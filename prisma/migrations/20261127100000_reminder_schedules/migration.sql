-- Reminders (issue 16, src/submissions/reminders.ts): one row per party whose reminders are under
-- way, made when its signature request is sent (or when reminder settings are given later). The
-- reminder scan reads the rows whose next_at has come, records the keyed reminder jobs in the
-- outbox and moves the row on, in one transaction: a restart neither loses nor doubles a reminder.
-- A change of the party's email or phone starts the sequence again (started_at then, sent_count 0).

-- CreateTable
CREATE TABLE "reminder_schedules" (
    "submitter_id" INTEGER NOT NULL,
    "account_id" INTEGER NOT NULL,
    "submission_id" INTEGER NOT NULL,
    "started_at" TIMESTAMP(3),
    "sent_count" INTEGER NOT NULL DEFAULT 0,
    "last_sent_at" TIMESTAMP(3),
    "next_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "reminder_schedules_pkey" PRIMARY KEY ("submitter_id")
);

-- CreateIndex
CREATE INDEX "reminder_schedules_next_at_idx" ON "reminder_schedules"("next_at");

-- CreateIndex
CREATE INDEX "reminder_schedules_submission_id_idx" ON "reminder_schedules"("submission_id");

-- CreateIndex
CREATE INDEX "reminder_schedules_account_id_idx" ON "reminder_schedules"("account_id");

-- AddForeignKey
ALTER TABLE "reminder_schedules" ADD CONSTRAINT "reminder_schedules_submitter_id_fkey" FOREIGN KEY ("submitter_id") REFERENCES "submitters"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "reminder_schedules" ADD CONSTRAINT "reminder_schedules_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "reminder_schedules" ADD CONSTRAINT "reminder_schedules_submission_id_fkey" FOREIGN KEY ("submission_id") REFERENCES "submissions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
