/**
 * Statuses computed at read time, each rule defined once here (reference/docuseal-behaviour.md
 * §4, §5.1, §6), and the `values` array DocuSeal returns for a submitter (§5.2).
 *
 * A submission's status rules are read from three facts about it (SUBMISSION_FACTS):
 * - the **display status** (`status` of a submission in GraphQL, REST and webhooks): submissionStatus;
 * - the **`status=` filters** of GET /submissions and GraphQL `submissions`: SUBMISSION_STATUS_FILTERS,
 *   DocuSeal's scopes (app/models/submission.rb `pending`/`completed`/`declined`/`expired`, read by
 *   lib/submissions/filter.rb). They are not "display status = X": `pending` keeps declined
 *   submissions that have not expired, `expired` keeps declined ones whose expire_at passed;
 *   `declined` leaves out completed ones (DocuSeal's scope does not; a completed submission with a
 *   declined party does not occur: a party that declined never completes). What holds: a
 *   submission whose display status is X is matched by the filter X.
 * The SQL of the filters is made from the same rules: src/db/queries/submission-page.ts knows each
 * fact's SQL and the caller passes a filter's facts (hand-written SQL lives under src/db/queries/);
 * test/submission-status.test.ts checks both select the same submissions in every state.
 * The submitter's status is submitterStatus. The list items of GET /submissions are made with these
 * functions too (serializeSubmissionListItem over loadSubmissionListReadModels).
 */
import type { SubmissionFact, SubmissionFacts } from '../db/queries/submission-page.ts';
import type { Field, Role } from '../templates/fields.ts';

/** A submitter's status values, in the order its rule tries them (§6). */
export const SUBMITTER_STATUSES = ['declined', 'completed', 'opened', 'sent', 'awaiting'] as const;
export type SubmitterStatus = (typeof SUBMITTER_STATUSES)[number];

/** declined → completed → opened → sent → awaiting (first match wins; §6, R: app/models/submitter.rb). */
export function submitterStatus(s: {
  declinedAt: Date | null;
  completedAt: Date | null;
  openedAt: Date | null;
  sentAt: Date | null;
}): SubmitterStatus {
  if (s.declinedAt) return 'declined';
  if (s.completedAt) return 'completed';
  if (s.openedAt) return 'opened';
  if (s.sentAt) return 'sent';
  return 'awaiting';
}

/** A submission's status values; also the values of the `status=` filter, in the order messages list them. */
export const SUBMISSION_STATUSES = ['pending', 'completed', 'declined', 'expired'] as const;
export type SubmissionStatus = (typeof SUBMISSION_STATUSES)[number];

/** The columns a submission's status is read from: its own, and its submitters' `declined_at`. */
export interface SubmissionStatusColumns {
  completedAt: Date | null;
  expireAt: Date | null;
  submitters: readonly { declinedAt: Date | null }[];
}

/**
 * The facts every submission status rule is made of, each a predicate over the columns at `now`:
 * - `completed`: completed_at is set (every non-viewer party completed, §5.1);
 * - `declined`: any submitter's declined_at is set;
 * - `expired`: expire_at is set and ≤ now (at now exactly it has expired, as DocuSeal's `..Time.current`).
 */
export const SUBMISSION_FACTS = {
  completed: (s: SubmissionStatusColumns) => s.completedAt !== null,
  declined: (s: SubmissionStatusColumns) => s.submitters.some((x) => x.declinedAt !== null),
  expired: (s: SubmissionStatusColumns, now: Date) => s.expireAt !== null && s.expireAt.getTime() <= now.getTime(),
} as const satisfies Readonly<Record<SubmissionFact, (s: SubmissionStatusColumns, now: Date) => boolean>>;

/**
 * The `status=` filters (§4; DocuSeal's scopes named above), each the facts a submission must
 * have (true) or lack (false); facts not named are ignored. src/db/queries/submission-page.ts
 * writes each as SQL from this table.
 */
export const SUBMISSION_STATUS_FILTERS: Readonly<Record<SubmissionStatus, SubmissionFacts>> = {
  /** Not completed and not expired; declined ones are included (DocuSeal's `pending` scope). */
  pending: { completed: false, expired: false },
  completed: { completed: true },
  /** Not completed and any party declined, expired or not. */
  declined: { completed: false, declined: true },
  /** Not completed and expire_at ≤ now; declined ones are included (DocuSeal's `expired` scope). */
  expired: { completed: false, expired: true },
};

/** Whether `submission` is matched by the `status=` filter `status` at `now` (SUBMISSION_STATUS_FILTERS). */
export function matchesStatusFilter(status: SubmissionStatus, submission: SubmissionStatusColumns, now: Date): boolean {
  return Object.entries(SUBMISSION_STATUS_FILTERS[status]).every(
    ([fact, wanted]) => SUBMISSION_FACTS[fact as SubmissionFact](submission, now) === wanted,
  );
}

/**
 * The display status: completed → declined (any submitter) → expired (expire_at ≤ now) → pending,
 * first match wins (§5.1; archiving does not change it).
 */
export function submissionStatus(
  submission: { completedAt: Date | null; expireAt: Date | null },
  submitters: readonly { declinedAt: Date | null }[],
  now = new Date(),
): SubmissionStatus {
  const columns = { completedAt: submission.completedAt, expireAt: submission.expireAt, submitters };
  if (SUBMISSION_FACTS.completed(columns)) return 'completed';
  if (SUBMISSION_FACTS.declined(columns)) return 'declined';
  if (SUBMISSION_FACTS.expired(columns, now)) return 'expired';
  return 'pending';
}

const TITLES: Record<string, string> = {};
const titleize = (type: string) => (TITLES[type] ??= type.charAt(0).toUpperCase() + type.slice(1));

/** What `values` shows of a stored file a value names: its signed URL, and a typed signature's text. */
export interface ValueFile {
  url: string;
  /** `metadata.typed_text` of a typed signature's image (src/documents/typed-signature.ts), else null. */
  typedText: string | null;
}

/** The columns of a stored file ValueFile is made of (with the signed URL's uuid and filename). */
export const VALUE_FILE_SELECT = { uuid: true, filename: true, metadata: true } as const;

/** A party's own fields that DocuSeal lists, with their names, raw and presented values (buildValues). */
function ownFieldValues(
  fields: Field[],
  submitter: { roleUuid: string; values: Record<string, unknown>; completedAt: Date | null },
  fileOf: (uuid: string) => ValueFile | null,
): { field: Field; name: string; raw: unknown; value: unknown }[] {
  const counters = new Map<string, number>();
  const out: { field: Field; name: string; raw: unknown; value: unknown }[] = [];
  for (const field of fields) {
    const n = (counters.get(field.type) ?? 0) + 1;
    counters.set(field.type, n);
    if (field.type === 'heading' || field.submitter_uuid !== submitter.roleUuid) continue;
    const raw = submitter.values[field.uuid];
    if ((raw === undefined || raw === null || raw === '') && !submitter.completedAt) continue;
    const name = field.name || `${titleize(field.type)} Field ${n}`;
    out.push({ field, name, raw, value: presentValue(field.type, raw, fileOf) });
  }
  return out;
}

/**
 * `values` as DocuSeal returns them (§5.2): walk the submission's fields in order with a per-type
 * counter across all parties; skip other parties' fields and heading fields; skip fields without a
 * value unless the submitter completed (then every own field appears, missing ones as null). An
 * unnamed field is called "<Type> Field <n>". Attachment values become URLs. A typed signature or
 * initials (an image rendered from text) appears twice, its image URL and then its text, as the
 * interface spec's `values` says ("signature fields may appear twice (an image URL and a typed
 * text)"; DocuSeal's own serializer lists the URL only; docs/compatibility.md).
 * @param fileOf the signed URL and typed text of a stored file uuid (null when unknown)
 */
export function buildValues(
  fields: Field[],
  submitter: { roleUuid: string; values: Record<string, unknown>; completedAt: Date | null },
  fileOf: (uuid: string) => ValueFile | null,
): { field: string; value: unknown }[] {
  const out: { field: string; value: unknown }[] = [];
  for (const { field, name, raw, value } of ownFieldValues(fields, submitter, fileOf)) {
    out.push({ field: name, value });
    if ((field.type === 'signature' || field.type === 'initials') && typeof raw === 'string') {
      const typed = fileOf(raw)?.typedText;
      if (typed) out.push({ field: name, value: typed });
    }
  }
  return out;
}

/**
 * A submitter's `fields` under `include=fields` (§5.2; DocuSeal's SerializeForWebhook.build_fields_array):
 * the fields buildValues lists, chosen and named the same way (a typed signature once, by its image URL),
 * as `{name, uuid, value, readonly}` (`readonly`: the field is read-only in the submission's copy).
 * @param fileOf the signed URL and typed text of a stored file uuid (null when unknown)
 */
export function buildFieldValues(
  fields: Field[],
  submitter: { roleUuid: string; values: Record<string, unknown>; completedAt: Date | null },
  fileOf: (uuid: string) => ValueFile | null,
): { name: string; uuid: string; value: unknown; readonly: boolean }[] {
  return ownFieldValues(fields, submitter, fileOf).map(({ field, name, value }) => ({
    name,
    uuid: field.uuid,
    value,
    readonly: field.readonly === true,
  }));
}

function presentValue(type: string, raw: unknown, fileOf: (uuid: string) => ValueFile | null): unknown {
  if (raw === undefined) return null;
  if (['image', 'signature', 'initials', 'stamp', 'payment', 'kba'].includes(type)) {
    return typeof raw === 'string' ? (fileOf(raw)?.url ?? null) : null;
  }
  if (type === 'file') return (Array.isArray(raw) ? raw : [raw]).map((uuid) => fileOf(String(uuid))?.url ?? null);
  return raw;
}

/** The role name of a submitter in its submission's copy of the roles. */
export function roleName(roles: Role[], roleUuid: string): string | null {
  return roles.find((r) => r.uuid === roleUuid)?.name ?? null;
}
