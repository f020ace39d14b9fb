/**
 * DocuSeal's submitter JSON (reference/docuseal-behaviour.md §5.2; interface spec "Submitter"),
 * from the read models the GraphQL fragments below select: the base keys every shape shares,
 * the create answer (POST /submissions and friends), GET/PUT /submitters, and the events list.
 */

/** The create-response submitter (POST /submissions and friends): values and embed_src, no documents. */
export const SUBMITTER_CREATE_FRAGMENT = /* GraphQL */ `
  fragment RestCreatedSubmitter on Submitter {
    id submissionId uuid email slug sentAt openedAt completedAt declinedAt createdAt updatedAt
    name phone externalId metadata status values preferences role language embedSrc
  }
`;

export interface CreatedSubmitterData {
  id: number;
  submissionId: number;
  uuid: string;
  email: string | null;
  slug: string;
  sentAt: string | null;
  openedAt: string | null;
  completedAt: string | null;
  declinedAt: string | null;
  createdAt: string;
  updatedAt: string;
  name: string | null;
  phone: string | null;
  externalId: string | null;
  metadata: unknown;
  status: string;
  values: unknown;
  preferences: unknown;
  role: string | null;
  /** The party's own language (a Signet extension), or null. */
  language: string | null;
  embedSrc: string;
}

/** Preferences as DocuSeal shows them: internal keys removed (§5.2). */
function publicPreferences(preferences: unknown): Record<string, unknown> {
  const { message: _message, ...rest } = (preferences ?? {}) as Record<string, unknown>;
  return rest;
}

/** A submitter in the create answer (§5.3): the base keys, `values` and `embed_src`. */
export function serializeCreatedSubmitter(s: CreatedSubmitterData) {
  return { ...serializeSubmitterBase(s), values: s.values, embed_src: s.embedSrc };
}

/** Base submitter keys (§5.2), in every shape. */
export const SUBMITTER_BASE_FRAGMENT = /* GraphQL */ `
  fragment RestSubmitterBase on Submitter {
    id submissionId uuid email slug sentAt openedAt completedAt declinedAt createdAt updatedAt
    name phone externalId metadata status preferences role language
  }
`;

/** GET /submitters and GET /submitters/{id}: plus values, documents, template, this submitter's events. */
export const SUBMITTER_READ_FRAGMENT = /* GraphQL */ `
  fragment RestSubmitterRead on Submitter {
    ...RestSubmitterBase
    values
    documents { name url }
    submission { template { id name createdAt updatedAt } }
    events { id submitterId eventType eventTimestamp data }
  }
  ${SUBMITTER_BASE_FRAGMENT}
`;

/** PUT /submitters/{id}: plus values, documents, embed_src. */
export const SUBMITTER_UPDATE_FRAGMENT = /* GraphQL */ `
  fragment RestSubmitterUpdate on Submitter {
    ...RestSubmitterBase
    values
    documents { name url }
    embedSrc
  }
  ${SUBMITTER_BASE_FRAGMENT}
`;

export type SubmitterBaseData = Omit<CreatedSubmitterData, 'values' | 'embedSrc'>;

export interface EventData {
  id: number;
  submitterId: number | null;
  eventType: string;
  eventTimestamp: string;
  /** The event's stored data (ip, ua, reason, delivery outcome, …). */
  data: unknown;
}

/**
 * The keys of an event's data DocuSeal shows (Submitters::SerializeForApi.serialize_events:
 * `event.data.slice('reason', 'firstname', 'lastname', 'method', 'country', 'idcode')`); the rest
 * (ip, ua, Signet's delivery outcomes) stays out of the API, as in DocuSeal (§5.4).
 */
const EVENT_DATA_KEYS = ['reason', 'firstname', 'lastname', 'method', 'country', 'idcode'] as const;

/** An event's `data` as DocuSeal shows it: the EVENT_DATA_KEYS it has, in that order; {} when none. */
function publicEventData(data: unknown): Record<string, unknown> {
  const stored = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of EVENT_DATA_KEYS) if (key in stored) out[key] = stored[key];
  return out;
}

/**
 * Signet's events that DocuSeal's `submission_events` leave out: `event_type` is an enum in
 * DocuSeal's OpenAPI document, which a generated client may hold to; GraphQL's `events` and the
 * audit log show them (`consent_accepted`: src/signing-form/signing-consent.ts).
 */
const SIGNET_ONLY_EVENTS: ReadonlySet<string> = new Set(['consent_accepted']);

/** A submission's or submitter's `submission_events` (§5.4): serializeEvent of each DocuSeal shows. */
export function serializeEvents(events: readonly EventData[]) {
  return events.filter((e) => !SIGNET_ONLY_EVENTS.has(e.eventType)).map(serializeEvent);
}

/**
 * A `submission_events` entry (§5.4): `{id, submitter_id, event_type, event_timestamp, data}`,
 * `data` narrowed as DocuSeal narrows it (publicEventData), e.g. `{"reason": "…"}` for a
 * decline_form, `{}` for most.
 */
export function serializeEvent(e: EventData) {
  return {
    id: e.id,
    submitter_id: e.submitterId,
    event_type: e.eventType,
    event_timestamp: e.eventTimestamp,
    data: publicEventData(e.data),
  };
}

/** The base keys in DocuSeal's order (§5.2). */
export function serializeSubmitterBase(s: SubmitterBaseData) {
  return {
    id: s.id,
    submission_id: s.submissionId,
    uuid: s.uuid,
    email: s.email,
    slug: s.slug,
    sent_at: s.sentAt,
    opened_at: s.openedAt,
    completed_at: s.completedAt,
    declined_at: s.declinedAt,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    name: s.name,
    phone: s.phone,
    external_id: s.externalId,
    metadata: s.metadata ?? {},
    status: s.status,
    application_key: s.externalId,
    preferences: publicPreferences(s.preferences),
    role: s.role,
    // Signet extension (docs/compatibility.md "The signer's language"): the party's own language.
    language: s.language,
  };
}

export interface SubmitterReadData extends SubmitterBaseData {
  values: unknown;
  documents: { name: string; url: string }[];
  submission: { template: { id: number; name: string; createdAt: string; updatedAt: string } };
  events: EventData[];
}

/** GET /submitters/{id} and the items of GET /submitters (§5.2): base keys, values, documents, template, events. */
export function serializeSubmitterRead(s: SubmitterReadData) {
  const t = s.submission.template;
  return {
    ...serializeSubmitterBase(s),
    values: s.values,
    documents: s.documents,
    template: { id: t.id, name: t.name, created_at: t.createdAt, updated_at: t.updatedAt },
    submission_events: serializeEvents(s.events),
  };
}

export interface SubmitterUpdateData extends SubmitterBaseData {
  values: unknown;
  documents: { name: string; url: string }[];
  embedSrc: string;
}

/** PUT /submitters/{id} (§5.2): base keys, values, documents, embed_src. */
export function serializeSubmitterUpdate(s: SubmitterUpdateData) {
  return { ...serializeSubmitterBase(s), values: s.values, documents: s.documents, embed_src: s.embedSrc };
}
