-- Idempotency keys (issue 16, docs/idempotency.md): a POST or PUT under /api, or a GraphQL mutation
-- over HTTP, sent with `Idempotency-Key` is recorded here per account; the same key with the same
-- request replays the first answer for 24 h. A row is in flight while `response_status` is null: its
-- holder renews `locked_until`, and once that has passed (the holder died) a retry takes the row
-- over. src/db/queries/idempotency-keys.ts holds the statements.

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "account_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "lock_token" UUID,
    "locked_until" TIMESTAMP(3),
    "response_status" INTEGER,
    "response_content_type" TEXT,
    "response_body" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("account_id","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys"("expires_at");

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
