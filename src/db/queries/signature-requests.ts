/**
 * The SQL of the signature request job (src/submissions/send-requests.ts): what one request needs,
 * read in one statement.
 */
import { sqlPool, type Db } from '../client.ts';

/**
 * What a request needs, in one statement: the submitter, its submission (and the field types of
 * the submitter's role, which choose the default message), the template's name, the account (and
 * its default reminder settings, for the reminders that start once the request is sent), the
 * sender, every party, and what names the submitter's language (its own, its submission's,
 * `metadata.lang`, the account's default: src/i18n/signer-language.ts). Plain SQL: this runs
 * once per request sent, and through Prisma the include tree cost several times more CPU than
 * the rest of the job (bench/submissions.ts).
 * Timestamps are read AT TIME ZONE 'UTC' (timestamp(3) columns hold UTC).
 */
const READ_REQUEST = {
  name: 'signet_send_request_read',
  text: `
    SELECT x.id, x.account_id AS "accountId", x.submission_id AS "submissionId",
           x.slug, x.email, x.name, x.phone, x.preferences, x.language, x.metadata->'lang' AS "metadataLang",
           x.sent_at IS NOT NULL AS sent, x.completed_at IS NOT NULL OR x.declined_at IS NOT NULL AS done,
           s.name AS "submissionName", s.expire_at AT TIME ZONE 'UTC' AS "expireAt",
           s.preferences AS "submissionPreferences", s.language AS "submissionLanguage",
           s.archived_at IS NOT NULL OR s.completed_at IS NOT NULL AS closed,
           (SELECT COALESCE(json_agg(DISTINCT f->>'type'), '[]') FROM jsonb_array_elements(s.template_fields) f
             WHERE f->>'submitter_uuid' = x.role_uuid::text) AS "ownTypes",
           t.id AS "templateId", t.name AS "templateName", a.name AS "accountName", a.timezone,
           a.preferences->'reminders' AS "accountReminders", a.preferences->'default_language' AS "accountLanguage",
           u.first_name AS "senderFirstName", u.last_name AS "senderLastName", u.email AS "senderEmail",
           u.id IS NOT NULL AS "hasSender",
           (SELECT json_agg(json_build_object('id', p.id, 'slug', p.slug, 'email', p.email, 'name', p.name,
                                              'phone', p.phone)
                            ORDER BY p.id)
              FROM submitters p WHERE p.submission_id = s.id) AS parties
      FROM submitters x
      JOIN submissions s ON s.id = x.submission_id
      JOIN templates t ON t.id = s.template_id
      JOIN accounts a ON a.id = s.account_id
      LEFT JOIN users u ON u.id = s.created_by_user_id
     WHERE x.id = $1`,
};

/** A submitter's request, as readSignatureRequest reads it. */
export interface SignatureRequestRow {
  id: number;
  accountId: number;
  submissionId: number;
  slug: string;
  email: string | null;
  name: string | null;
  phone: string | null;
  preferences: { message?: { subject?: string; body?: string }; reply_to?: string } | null;
  /** The submitter's `language`, its `metadata.lang` (JSON as stored), its submission's `language`. */
  language: string | null;
  metadataLang: unknown;
  submissionLanguage: string | null;
  sent: boolean;
  done: boolean;
  submissionName: string | null;
  expireAt: Date | null;
  submissionPreferences: { message?: { subject?: string; body?: string }; reminders?: unknown } | null;
  closed: boolean;
  ownTypes: string[];
  templateId: number;
  templateName: string;
  accountName: string;
  timezone: string;
  /** The account's default reminder settings (`preferences.reminders`), JSON as stored. */
  accountReminders: unknown;
  /** The account's default language (`preferences.default_language`), JSON as stored. */
  accountLanguage: unknown;
  senderFirstName: string | null;
  senderLastName: string | null;
  senderEmail: string | null;
  hasSender: boolean;
  parties: { id: number; slug: string; email: string | null; name: string | null; phone: string | null }[];
}

/** READ_REQUEST for `submitterId`: the row, or undefined when the submitter does not exist. */
export async function readSignatureRequest(db: Db, submitterId: number): Promise<SignatureRequestRow | undefined> {
  const { rows } = await sqlPool(db).query<SignatureRequestRow>({ ...READ_REQUEST, values: [submitterId] });
  return rows[0];
}
