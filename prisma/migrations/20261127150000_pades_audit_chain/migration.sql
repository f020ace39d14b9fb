-- Issue 17: signatures that stay verifiable for decades, and an audit trail that shows tampering.
--
-- 1. signing_certificates holds, besides signing certificates, the service's own CA (kind `ca`:
--    issues the generated signing and timestamp certificates, publishes a CRL at
--    /pki/crl/<id>.crl) and its own timestamp authority (kind `tsa`); accounts upload their own
--    signing certificates. New rows keep the bundle and its password sealed with SECRET_KEY_BASE
--    (`sealed`), and the certificate's DER in the clear (public: lists, expiry, the CRL read it
--    without opening the bundle). src/signing/certificates.ts, certificate-authority.ts.
--
-- 2. submission_events is a hash chain per submission: each row stores its place in the chain,
--    the hash of the event before it and its own hash (SHA-256 over its content and that previous
--    hash, submission_event_hash). The BEFORE INSERT trigger fills them for every insert, from any
--    code path (Prisma, the SQL under src/db/queries, those added later), under a transaction
--    advisory lock per submission (key 7301017: src/db/queries/advisory-locks.ts lists the keys),
--    so concurrent inserts for one submission wait for each other's commit and never fork the
--    chain; the unique index makes a fork impossible even so. Rows are append-only: an UPDATE is
--    refused. src/signing/audit-chain.ts verifies a chain with the same function.

-- AlterTable
ALTER TABLE "signing_certificates" ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'signing',
ADD COLUMN "certificate" BYTEA,
ADD COLUMN "issuer_id" INTEGER,
ADD COLUMN "not_after" TIMESTAMP(3),
ADD COLUMN "sealed" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "expiry_warned_at" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "signing_certificates_issuer_id_idx" ON "signing_certificates"("issuer_id");

-- AddForeignKey
ALTER TABLE "signing_certificates" ADD CONSTRAINT "signing_certificates_issuer_id_fkey" FOREIGN KEY ("issuer_id") REFERENCES "signing_certificates"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AlterTable
ALTER TABLE "submission_events" ADD COLUMN "chain_seq" INTEGER,
ADD COLUMN "prev_hash" BYTEA,
ADD COLUMN "hash" BYTEA;

-- The hash of one event: SHA-256 of the UTF-8 text of a JSON array of its place in the chain, the
-- previous event's hash (hex, null for the first), and its columns, timestamps as ISO 8601 UTC
-- with milliseconds (the columns hold UTC). jsonb's text form is canonical (keys sorted, one
-- spacing), so the same row always gives the same bytes; docs/signatures.md spells it out.
CREATE FUNCTION "submission_event_hash"(
  chain_seq INTEGER, prev_hash BYTEA, id INTEGER, account_id INTEGER, submission_id INTEGER, submitter_id INTEGER,
  event_type TEXT, event_timestamp TIMESTAMP(3), data JSONB, created_at TIMESTAMP(3)
) RETURNS BYTEA LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT sha256(convert_to(jsonb_build_array(
    chain_seq, encode(prev_hash, 'hex'), id, account_id, submission_id, submitter_id, event_type,
    to_char(event_timestamp, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), data,
    to_char(created_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text, 'UTF8'))
$$;

-- Backfill: the events written before this migration, chained in id order per submission.
DO $$
DECLARE
  event RECORD;
  current_submission INTEGER := NULL;
  seq INTEGER := 0;
  previous BYTEA := NULL;
  digest BYTEA;
BEGIN
  FOR event IN SELECT * FROM "submission_events" ORDER BY "submission_id", "id" LOOP
    IF current_submission IS DISTINCT FROM event.submission_id THEN
      current_submission := event.submission_id;
      seq := 0;
      previous := NULL;
    END IF;
    seq := seq + 1;
    digest := submission_event_hash(seq, previous, event.id, event.account_id, event.submission_id,
      event.submitter_id, event.event_type, event.event_timestamp, event.data, event.created_at);
    UPDATE "submission_events" SET "chain_seq" = seq, "prev_hash" = previous, "hash" = digest WHERE "id" = event.id;
    previous := digest;
  END LOOP;
END $$;

-- The chain's columns are always set (by the trigger below); Prisma sees them as optional.
ALTER TABLE "submission_events" ADD CONSTRAINT "submission_events_chained"
  CHECK ("chain_seq" IS NOT NULL AND "hash" IS NOT NULL AND ("chain_seq" = 1) = ("prev_hash" IS NULL));

-- CreateIndex
CREATE UNIQUE INDEX "submission_events_submission_id_chain_seq_key" ON "submission_events"("submission_id", "chain_seq");

CREATE FUNCTION "submission_events_chain"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  last_seq INTEGER;
  last_hash BYTEA;
BEGIN
  -- Serialised per submission until the end of the inserting transaction: the next insert of the
  -- same submission reads this row once it is committed (READ COMMITTED: a new snapshot per
  -- statement), or the row before it if this transaction rolled back.
  PERFORM pg_advisory_xact_lock(7301017, NEW.submission_id);
  SELECT e.chain_seq, e.hash INTO last_seq, last_hash
    FROM "submission_events" e
   WHERE e.submission_id = NEW.submission_id
   ORDER BY e.chain_seq DESC
   LIMIT 1;
  NEW.chain_seq := COALESCE(last_seq, 0) + 1;
  NEW.prev_hash := last_hash;
  NEW.hash := submission_event_hash(NEW.chain_seq, NEW.prev_hash, NEW.id, NEW.account_id, NEW.submission_id,
    NEW.submitter_id, NEW.event_type, NEW.event_timestamp, NEW.data, NEW.created_at);
  RETURN NEW;
END $$;

CREATE TRIGGER "submission_events_chain" BEFORE INSERT ON "submission_events"
  FOR EACH ROW EXECUTE FUNCTION "submission_events_chain"();

CREATE FUNCTION "submission_events_append_only"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'submission_events rows are append-only (the audit chain of submission %)', OLD.submission_id;
END $$;

CREATE TRIGGER "submission_events_append_only" BEFORE UPDATE ON "submission_events"
  FOR EACH ROW EXECUTE FUNCTION "submission_events_append_only"();
