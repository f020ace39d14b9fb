/**
 * The SQL of the email outbox's hot path (src/notifications/deliver.ts queueAndDeliverEmail: the
 * signature request job): plain, named statements on the pool under the Prisma client, fewer
 * round trips than Prisma for the usual case (a job's first run). The rows' lifecycle and
 * guarantees are described in src/notifications/deliver.ts; the events written with an outcome
 * are in ./notification-events.ts.
 */
import { sqlPool, type Db } from '../client.ts';
import { messageReturning, recordSentCtes } from './notification-events.ts';

/**
 * The columns of a new email_messages row that come from `j` (QueueEmailInput as JSON, `$1`),
 * and their values: the INSERTs below add provider, status, attempt and times.
 */
const NEW_EMAIL_COLUMNS = `account_id, submission_id, submitter_id, kind, dedupe_key, from_address,
                           to_addresses, cc_addresses, bcc_addresses, reply_to, subject, text_body, html_body`;
const NEW_EMAIL_VALUES = `(j->>'accountId')::int, (j->>'submissionId')::int, (j->>'submitterId')::int,
           j->>'kind', j->>'dedupeKey', j->>'from',
           ARRAY(SELECT jsonb_array_elements_text(j->'to')),
           ARRAY(SELECT jsonb_array_elements_text(COALESCE(j->'cc', '[]'))),
           ARRAY(SELECT jsonb_array_elements_text(COALESCE(j->'bcc', '[]'))),
           j->>'replyTo', j->>'subject', j->>'textBody', j->>'htmlBody'`;

/**
 * `$1`: the email as JSON (QueueEmailInput's keys), `$2`: the mailer's name, `$3`: now (ISO), `$4`: the claimant.
 * Stores the row already claimed ('sending', first attempt) unless its dedupe key is stored;
 * returns it only when inserted. Columns and defaults as queueEmail's through Prisma.
 */
const INSERT_CLAIMED_EMAIL = {
  name: 'signet_outbox_insert_claimed_email',
  text: `
    INSERT INTO email_messages (${NEW_EMAIL_COLUMNS},
                                provider, status, attempt_count, claimed_by, created_at, updated_at)
    SELECT ${NEW_EMAIL_VALUES},
           $2, 'sending', 1, $4, $3::timestamptz AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC'
      FROM (SELECT $1::jsonb AS j) input
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id`,
};

const EMAIL_ID_BY_DEDUPE_KEY = {
  name: 'signet_outbox_email_by_key',
  text: `SELECT id FROM email_messages WHERE dedupe_key = $1`,
};

/**
 * `$1` id, `$2` status, `$3` now (ISO), `$4` sent (bool), `$5`
 * provider message id, `$6` last error: deliverOnce's updates.
 */
const UPDATE_EMAIL_STATE = {
  name: 'signet_outbox_update_email',
  text: `
    UPDATE email_messages
       SET status = $2, updated_at = $3::timestamptz AT TIME ZONE 'UTC',
           sent_at = CASE WHEN $4::boolean THEN $3::timestamptz AT TIME ZONE 'UTC' ELSE sent_at END,
           provider_message_id = CASE WHEN $4::boolean THEN $5 ELSE provider_message_id END,
           last_error = $6
     WHERE id = $1`,
};

/**
 * INSERT_CLAIMED_EMAIL and markSentAndRecord('email') in one statement, for the outbox mailer,
 * whose sending is the storing ($1 input JSON, $2 submission event type, $3 now ISO): the row
 * inserted already sent (provider 'outbox': kept, not sent), its event and the submitter's
 * sent_at. Nothing when the key is stored.
 */
const INSERT_SENT_OUTBOX_EMAIL_AND_RECORD = {
  name: 'signet_outbox_insert_sent_and_record',
  text: `
    WITH message AS (
      INSERT INTO email_messages (${NEW_EMAIL_COLUMNS},
                                  provider, status, attempt_count, sent_at, created_at, updated_at)
      SELECT ${NEW_EMAIL_VALUES},
             'outbox', 'sent', 1,
             $3::timestamptz AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC'
        FROM (SELECT $1::jsonb AS j) input
      ON CONFLICT (dedupe_key) DO NOTHING
      RETURNING ${messageReturning('email')}
    ), ${recordSentCtes('email')}
    SELECT id FROM message`,
};

/**
 * Stores the email (`input`: QueueEmailInput of src/notifications/deliver.ts) already claimed by
 * `claimant` for `provider` ('sending', attempt 1) unless its dedupe key is stored.
 * @param now ISO 8601
 * @returns the new row's id, or undefined when the key was stored
 */
export async function insertClaimedEmail(
  db: Db,
  input: unknown,
  options: { provider: string; now: string; claimant: string | null },
): Promise<number | undefined> {
  const { rows } = await sqlPool(db).query<{ id: number }>({
    ...INSERT_CLAIMED_EMAIL,
    values: [JSON.stringify(input), options.provider, options.now, options.claimant],
  });
  return rows[0]?.id;
}

/** The id of the email stored under `dedupeKey`, or undefined. */
export async function emailIdByDedupeKey(db: Db, dedupeKey: string): Promise<number | undefined> {
  const { rows } = await sqlPool(db).query<{ id: number }>({ ...EMAIL_ID_BY_DEDUPE_KEY, values: [dedupeKey] });
  return rows[0]?.id;
}

/**
 * Stores the outcome of an attempt on email `id`: `status`, updated at `at` (ISO 8601); when
 * `sent`, also sent_at = `at` and the provider's message id; last_error as given.
 */
export async function updateEmailState(
  db: Db,
  id: number,
  state: { status: string; at: string; sent: boolean; providerMessageId: string | null; lastError: string | null },
): Promise<void> {
  await sqlPool(db).query({
    ...UPDATE_EMAIL_STATE,
    values: [id, state.status, state.at, state.sent, state.providerMessageId, state.lastError],
  });
}

/**
 * INSERT_SENT_OUTBOX_EMAIL_AND_RECORD: the email stored already sent by the outbox mailer, with
 * its `eventType` event and the submitter's sent_at, unless its dedupe key is stored.
 * @param now ISO 8601
 * @returns the new row's id, or undefined when the key was stored
 */
export async function insertSentOutboxEmailAndRecord(
  db: Db,
  input: unknown,
  options: { eventType: string; now: string },
): Promise<number | undefined> {
  const { rows } = await sqlPool(db).query<{ id: number }>({
    ...INSERT_SENT_OUTBOX_EMAIL_AND_RECORD,
    values: [JSON.stringify(input), options.eventType, options.now],
  });
  return rows[0]?.id;
}
