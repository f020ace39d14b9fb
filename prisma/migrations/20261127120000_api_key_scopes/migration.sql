-- Scoped API keys (issue 16; docs/security.md "Scoped API keys"). A key carries its scopes —
-- `read` (queries and subscriptions, REST GET), `write` (everything; a write key also reads: its
-- scopes are stored as both) — and the template folders it is limited to, if any (their
-- subfolders included, resolved on each request by src/db/queries/api-keys.ts AUTHENTICATE).
-- Keys made before keep full access: both scopes, no folder limit (an empty list).
--
-- folder_ids holds folder ids in the order given (the first takes the templates a request puts in
-- no folder). No foreign key can point from an array's elements; folders are deleted only with
-- their account, which deletes its keys too, and AUTHENTICATE joins the folders, so an id
-- without a folder would simply match nothing.

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN "scopes" TEXT[] NOT NULL DEFAULT ARRAY['read', 'write']::TEXT[],
ADD COLUMN "folder_ids" INTEGER[] NOT NULL DEFAULT ARRAY[]::INTEGER[];

ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_scopes_check"
  CHECK (cardinality("scopes") > 0 AND "scopes" <@ ARRAY['read', 'write']::TEXT[]);
