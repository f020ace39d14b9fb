-- Issue 23 §7: a revoked credential reaches every instance within a second, with or without Redis.
--
-- Every change that makes an API key stop authenticating sends a NOTIFY on the channel
-- `signet_credential_revocations` from inside its own transaction, so PostgreSQL delivers it when
-- (and only if) the change commits: a key revoked (`revoked_at` set), a user or an account
-- archived (`archived_at` set), a key deleted (also by the cascade of a deleted user or account).
-- Triggers, so that every path sends it — the API, the CLI, SQL typed by an operator, paths added
-- later — with nothing to remember in the code. Each instance LISTENs on one dedicated connection
-- (src/db/listener.ts) and closes the WebSockets and SSE streams opened with the credential
-- (src/accounts/credential-sessions.ts). NOTIFY reaches the listeners of this database only.
--
-- The payload is JSON naming one credential: {"apiKeyIds":[id]}, {"userIds":[id]} or
-- {"accountIds":[id]} (src/accounts/credential-sessions.ts parseRevocation reads it).

CREATE FUNCTION "notify_credential_revocation"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('signet_credential_revocations', json_build_object(
    CASE TG_TABLE_NAME WHEN 'api_keys' THEN 'apiKeyIds' WHEN 'users' THEN 'userIds' ELSE 'accountIds' END,
    json_build_array(OLD."id"))::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER "api_keys_revoked" AFTER UPDATE OF "revoked_at" ON "api_keys" FOR EACH ROW
  WHEN (OLD."revoked_at" IS NULL AND NEW."revoked_at" IS NOT NULL)
  EXECUTE FUNCTION "notify_credential_revocation"();

CREATE TRIGGER "api_keys_deleted" AFTER DELETE ON "api_keys" FOR EACH ROW
  EXECUTE FUNCTION "notify_credential_revocation"();

CREATE TRIGGER "users_archived" AFTER UPDATE OF "archived_at" ON "users" FOR EACH ROW
  WHEN (OLD."archived_at" IS NULL AND NEW."archived_at" IS NOT NULL)
  EXECUTE FUNCTION "notify_credential_revocation"();

CREATE TRIGGER "accounts_archived" AFTER UPDATE OF "archived_at" ON "accounts" FOR EACH ROW
  WHEN (OLD."archived_at" IS NULL AND NEW."archived_at" IS NOT NULL)
  EXECUTE FUNCTION "notify_credential_revocation"();
