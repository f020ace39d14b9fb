/**
 * The SQL of webhook payloads (src/webhooks/payloads.ts): for each account an event is about,
 * the account and the first user that is not archived, looked up for every event dispatched in
 * one turn of the event loop in one statement (src/db/turn-batch.ts).
 */
import type DataLoader from 'dataloader';
import { sqlPool, type Db } from '../client.ts';
import { turnBatch } from '../turn-batch.ts';

/**
 * $1 accounts: for each (by its position n), the account (not archived) and its first user that
 * is not archived; no row for an account without both. Plain SQL rather than Prisma, as
 * src/accounts/authenticate.ts: it runs for every event with endpoints. Timestamps are
 * timestamp(3) holding UTC, read `AT TIME ZONE 'UTC'`. Columns are named as authenticate's rows
 * (`a_*`, `u_*`), for accountAndUserFromRow.
 */
const ACCOUNT_VIEWERS = {
  name: 'signet_webhook_account_viewers',
  text: `
    SELECT i.n, a.id AS a_id, a.uuid AS a_uuid, a.name AS a_name, a.timezone AS a_timezone, a.locale AS a_locale,
           a.testing AS a_testing, a.preferences AS a_preferences,
           a.created_at AT TIME ZONE 'UTC' AS a_created_at, a.updated_at AT TIME ZONE 'UTC' AS a_updated_at,
           a.submission_list_epoch AS a_submission_list_epoch,
           u.id AS u_id, u.uuid AS u_uuid, u.email AS u_email, u.first_name AS u_first_name, u.last_name AS u_last_name,
           u.role AS u_role,
           u.created_at AT TIME ZONE 'UTC' AS u_created_at, u.updated_at AT TIME ZONE 'UTC' AS u_updated_at
      FROM unnest($1::int[]) WITH ORDINALITY AS i(account_id, n)
      JOIN accounts a ON a.id = i.account_id AND a.archived_at IS NULL
      JOIN LATERAL (SELECT * FROM users WHERE account_id = a.id AND archived_at IS NULL ORDER BY id LIMIT 1) u ON true`,
};

/**
 * A loader of accounts' rows with their first active user (ACCOUNT_VIEWERS): `load(accountId)`
 * resolves to the row, or null for an unknown or archived account or one without an active
 * user. The look-ups of one turn of the event loop share one statement.
 */
export function createAccountViewerLookup(db: Db): DataLoader<number, Record<string, any> | null> {
  const pool = sqlPool(db);
  return turnBatch<number, Record<string, any> | null>(async (accountIds) => {
    const { rows } = await pool.query({ ...ACCOUNT_VIEWERS, values: [accountIds] });
    const found = accountIds.map((): Record<string, any> | null => null);
    for (const row of rows) found[Number(row.n) - 1] = row;
    return found;
  });
}
