-- Who claimed an email or SMS being sent (issue 12): the job that sends it. When that job runs
-- again (its instance died mid-send and its lock expired), it takes the message back at once
-- instead of waiting for the lease of a stranger's claim (src/notifications/deliver.ts).

-- AlterTable
ALTER TABLE "email_messages" ADD COLUMN "claimed_by" TEXT;

-- AlterTable
ALTER TABLE "sms_messages" ADD COLUMN "claimed_by" TEXT;
