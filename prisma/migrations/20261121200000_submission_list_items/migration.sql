-- GET /api/submissions list items as PostgreSQL renders them (rest-compat/serializers/submission-list.ts),
-- kept per submission and rendered again only after a row they are built from has changed.
--
-- Validity (checked by the reading statement, in its own snapshot):
--   rendered_generation = generation   no write to the submission, its submitters or its completed
--                                      documents since it was rendered (triggers below bump generation);
--   rendered_epoch = accounts.submission_list_epoch
--                                      no change since to a template, folder or user of the account
--                                      (names, folder paths and the creator are in every item);
--   format                             the rendering statement's fingerprint (a new serializer renders again);
--   stale_at                           a pending submission's expire_at: its status turns "expired" then.
-- The reader stores an item only with `generation` still equal to what its snapshot saw, and skips
-- rows a writer holds locked, so a write racing a read never leaves a stale item and a reader never
-- waits for (or deadlocks with) a writer.

-- AlterTable
ALTER TABLE "accounts" ADD COLUMN "submission_list_epoch" BIGINT NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "submission_list_items" (
    "submission_id" INTEGER NOT NULL,
    "generation" BIGINT NOT NULL DEFAULT 0,
    "rendered_generation" BIGINT,
    "rendered_epoch" BIGINT,
    "format" TEXT,
    "stale_at" TIMESTAMP(3),
    "item" TEXT,
    "audit_log_file_uuid" TEXT,
    "audit_log_filename" TEXT,
    "combined_file_uuid" TEXT,
    "combined_filename" TEXT,

    CONSTRAINT "submission_list_items_pkey" PRIMARY KEY ("submission_id")
) WITH (fillfactor = 70);

-- AddForeignKey
ALTER TABLE "submission_list_items" ADD CONSTRAINT "submission_list_items_submission_id_fkey" FOREIGN KEY ("submission_id") REFERENCES "submissions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Existing submissions
INSERT INTO "submission_list_items" ("submission_id") SELECT "id" FROM "submissions";

-- A submission's row is created with it (same transaction: a reader that sees one sees the other).
CREATE FUNCTION "submission_list_items_create"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO submission_list_items (submission_id) SELECT id FROM new_rows ORDER BY id;
  RETURN NULL;
END $$;
CREATE TRIGGER "submissions_list_item_create" AFTER INSERT ON "submissions"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_create"();

-- Writes to what an item is built from bump its generation (one statement per writing statement).
CREATE FUNCTION "submission_list_items_bump_by_id"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE submission_list_items SET generation = generation + 1
   WHERE submission_id IN (SELECT id FROM changed_rows);
  RETURN NULL;
END $$;
CREATE FUNCTION "submission_list_items_bump_by_submission_id"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE submission_list_items SET generation = generation + 1
   WHERE submission_id IN (SELECT submission_id FROM changed_rows);
  RETURN NULL;
END $$;
CREATE TRIGGER "submissions_list_item_update" AFTER UPDATE ON "submissions"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_bump_by_id"();
CREATE TRIGGER "submitters_list_item_insert" AFTER INSERT ON "submitters"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_bump_by_submission_id"();
CREATE TRIGGER "submitters_list_item_update" AFTER UPDATE ON "submitters"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_bump_by_submission_id"();
CREATE TRIGGER "submitters_list_item_delete" AFTER DELETE ON "submitters"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_bump_by_submission_id"();
CREATE TRIGGER "completed_documents_list_item_insert" AFTER INSERT ON "completed_documents"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_bump_by_submission_id"();
CREATE TRIGGER "completed_documents_list_item_delete" AFTER DELETE ON "completed_documents"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "submission_list_items_bump_by_submission_id"();

-- Changes to templates, folders and users shown in items bump the account's epoch (rare writes;
-- every item of the account is rendered again on its next read).
CREATE FUNCTION "submission_list_epoch_bump"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts SET submission_list_epoch = submission_list_epoch + 1
   WHERE id = (CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END);
  RETURN NULL;
END $$;
CREATE TRIGGER "templates_list_epoch" AFTER UPDATE ON "templates" FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.external_id IS DISTINCT FROM NEW.external_id
     OR OLD.folder_id IS DISTINCT FROM NEW.folder_id OR OLD.created_at IS DISTINCT FROM NEW.created_at
     OR OLD.updated_at IS DISTINCT FROM NEW.updated_at OR OLD.account_id IS DISTINCT FROM NEW.account_id)
  EXECUTE FUNCTION "submission_list_epoch_bump"();
CREATE TRIGGER "folders_list_epoch_update" AFTER UPDATE ON "folders" FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.parent_folder_id IS DISTINCT FROM NEW.parent_folder_id)
  EXECUTE FUNCTION "submission_list_epoch_bump"();
CREATE TRIGGER "folders_list_epoch_delete" AFTER DELETE ON "folders" FOR EACH ROW
  EXECUTE FUNCTION "submission_list_epoch_bump"();
CREATE TRIGGER "users_list_epoch" AFTER UPDATE ON "users" FOR EACH ROW
  WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.first_name IS DISTINCT FROM NEW.first_name
     OR OLD.last_name IS DISTINCT FROM NEW.last_name)
  EXECUTE FUNCTION "submission_list_epoch_bump"();
