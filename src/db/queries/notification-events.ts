/**
 * The SQL that records what happened to a submission's email or SMS on the submission itself
 * (issue 13, "The audit log tells the truth"): each statement changes the outbox row
 * (email_messages / sms_messages, src/notifications/deliver.ts) and writes the submission event
 * that says so in one statement, so that a crash can lose neither without the other.
 *
 * Event data (a submission event of the message's submitter; docs/compatibility.md, "Delivery
 * events"):
 * - the sent event (`send_email`, `send_sms`): `{email_message_id | sms_message_id, provider,
 *   attempt, to}`. `provider` is the one that took it: `smtp`, `sendgrid`, `twilio`, or `outbox`
 *   when none is configured and the message was only kept (nothing left the service).
 * - the failed event (`fail_email`, `fail_sms`): the same keys plus `error` (the provider's
 *   message, at most 500 characters), `max_attempts` and `retrying` (true when the row went back to
 *   'queued' for another attempt, false when it was given up). A message that waited for a retry
 *   but was no longer needed when the retry came (the party had completed or declined, the
 *   submission was archived) is given up with a failed event whose `retrying` is false and whose
 *   `reason` says why (abandonAndRecord).
 *
 * Times: `$3` is now as an ISO string, stored AT TIME ZONE 'UTC' (timestamp(3) columns hold UTC).
 */

import { sqlPool, type Db } from '../client.ts';

/** The recipient and message-id key of each outbox table, for the event data. */
const TABLES = {
  email: { table: 'email_messages', idKey: 'email_message_id', recipient: 'to_addresses[1]' },
  sms: { table: 'sms_messages', idKey: 'sms_message_id', recipient: 'to_number' },
} as const;

export type NotificationChannel = keyof typeof TABLES;

/** The columns a CTE named `message` returns for recordSentCtes (RETURNING or SELECT list). */
export const messageReturning = (channel: NotificationChannel) =>
  `id, account_id, submission_id, submitter_id, provider, attempt_count, ${TABLES[channel].recipient} AS recipient`;

/**
 * The sent event of the row in the CTE `message` (`$2` event type, `$3` now) and the submitter's
 * sent_at when unset, as CTEs to follow it.
 */
export const recordSentCtes = (channel: NotificationChannel) => `
  event AS (
    INSERT INTO submission_events
                (account_id, submission_id, submitter_id, event_type, data, event_timestamp, created_at)
    SELECT account_id, submission_id, submitter_id, $2,
           jsonb_build_object('${TABLES[channel].idKey}', id,
                              'provider', provider, 'attempt', attempt_count, 'to', recipient),
           $3::timestamptz AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC'
      FROM message WHERE submission_id IS NOT NULL
  ), submitter AS (
    UPDATE submitters SET sent_at = $3::timestamptz AT TIME ZONE 'UTC', updated_at = $3::timestamptz AT TIME ZONE 'UTC'
     WHERE id = (SELECT submitter_id FROM message) AND sent_at IS NULL
  )`;

/**
 * `$1` id, `$2` sent event type, `$3` now, `$4` provider message id: marks the row sent and
 * records its sent event and the submitter's sent_at. Returns `n`, 1 when the row exists.
 */
export const markSentAndRecord = (channel: NotificationChannel) => ({
  name: `signet_${channel}_mark_sent_and_record`,
  text: `
    WITH message AS (
      UPDATE ${TABLES[channel].table}
         SET status = 'sent',
             updated_at = $3::timestamptz AT TIME ZONE 'UTC', sent_at = $3::timestamptz AT TIME ZONE 'UTC',
             provider_message_id = $4, last_error = NULL
       WHERE id = $1
      RETURNING ${messageReturning(channel)}
    ), ${recordSentCtes(channel)}
    SELECT count(*)::int AS n FROM message`,
});

/**
 * `$1` id, `$2` failed event type, `$3` now, `$4` status ('queued' to retry, 'failed' when given
 * up), `$5` the error, `$6` attempts allowed: stores the outcome of a failed attempt on the row
 * and records it as a failed event (see the module comment).
 */
export const markFailedAndRecord = (channel: NotificationChannel) => ({
  name: `signet_${channel}_mark_failed_and_record`,
  text: `
    WITH message AS (
      UPDATE ${TABLES[channel].table}
         SET status = $4, updated_at = $3::timestamptz AT TIME ZONE 'UTC', last_error = $5
       WHERE id = $1
      RETURNING ${messageReturning(channel)}
    )
    INSERT INTO submission_events
                (account_id, submission_id, submitter_id, event_type, data, event_timestamp, created_at)
    SELECT account_id, submission_id, submitter_id, $2,
           jsonb_build_object('${TABLES[channel].idKey}', id,
                              'provider', provider, 'attempt', attempt_count, 'to', recipient,
                              'error', left($5, 500), 'max_attempts', $6::int, 'retrying', $4 = 'queued'),
           $3::timestamptz AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC'
      FROM message WHERE submission_id IS NOT NULL`,
});

/**
 * `$1` dedupe key, `$2` failed event type, `$3` now, `$4` why it is not retried, `$5` attempts
 * allowed: gives up a message that failed and waits in 'queued' for a retry that is no longer
 * wanted, and records it as a failed event with `retrying: false` and `reason` (its `error` stays
 * the last provider error). Nothing when the row was never tried or is not waiting.
 */
export const abandonAndRecord = (channel: NotificationChannel) => ({
  name: `signet_${channel}_abandon_and_record`,
  text: `
    WITH message AS (
      UPDATE ${TABLES[channel].table}
         SET status = 'failed', updated_at = $3::timestamptz AT TIME ZONE 'UTC'
       WHERE dedupe_key = $1 AND status = 'queued' AND attempt_count > 0
      RETURNING ${messageReturning(channel)}, last_error
    )
    INSERT INTO submission_events
                (account_id, submission_id, submitter_id, event_type, data, event_timestamp, created_at)
    SELECT account_id, submission_id, submitter_id, $2,
           jsonb_build_object('${TABLES[channel].idKey}', id,
                              'provider', provider, 'attempt', attempt_count, 'to', recipient,
                              'error', left(last_error, 500), 'max_attempts', $5::int,
                              'retrying', false, 'reason', $4::text),
           $3::timestamptz AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC'
      FROM message WHERE submission_id IS NOT NULL`,
});

const STATEMENTS = {
  email: {
    sent: markSentAndRecord('email'),
    failed: markFailedAndRecord('email'),
    abandoned: abandonAndRecord('email'),
  },
  sms: { sent: markSentAndRecord('sms'), failed: markFailedAndRecord('sms'), abandoned: abandonAndRecord('sms') },
} as const;

/**
 * Runs markSentAndRecord on `db`'s pool: marks message `id` of `channel`'s table sent and
 * records its sent event (`eventType`, e.g. `send_email`) and the submitter's sent_at.
 * @param now ISO 8601
 */
export async function recordMessageSent(
  db: Db,
  channel: NotificationChannel,
  options: { id: number; eventType: string; now: string; providerMessageId: string | null },
): Promise<void> {
  await sqlPool(db).query({
    ...STATEMENTS[channel].sent,
    values: [options.id, options.eventType, options.now, options.providerMessageId],
  });
}

/**
 * Runs markFailedAndRecord on `db`'s pool: stores a failed attempt (`status` 'queued' to retry,
 * 'failed' when given up) and records its failed event (`eventType`, e.g. `fail_email`).
 * @param now ISO 8601
 */
export async function recordMessageFailed(
  db: Db,
  channel: NotificationChannel,
  options: { id: number; eventType: string; now: string; status: string; error: string; maxAttempts: number },
): Promise<void> {
  await sqlPool(db).query({
    ...STATEMENTS[channel].failed,
    values: [options.id, options.eventType, options.now, options.status, options.error, options.maxAttempts],
  });
}

/**
 * Runs abandonAndRecord on `db`'s pool: gives up the message of `dedupeKey` waiting for a retry
 * that is no longer wanted, and records why (`reason`) as a failed event (`eventType`).
 * @param now ISO 8601
 */
export async function abandonMessage(
  db: Db,
  channel: NotificationChannel,
  options: { dedupeKey: string; eventType: string; now: string; reason: string; maxAttempts: number },
): Promise<void> {
  await sqlPool(db).query({
    ...STATEMENTS[channel].abandoned,
    values: [options.dedupeKey, options.eventType, options.now, options.reason, options.maxAttempts],
  });
}
