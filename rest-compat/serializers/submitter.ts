/**
 * DocuSeal's submitter JSON (reference/docuseal-behaviour.md §5.2; interface spec "Submitter").
 */

/** The create-response submitter (POST /submissions and friends): values and embed_src, no documents. */
export const SUBMITTER_CREATE_FRAGMENT = /* GraphQL */ `
  fragment RestCreatedSubmitter on Submitter {
    id submissionId uuid email slug sentAt openedAt completedAt declinedAt createdAt updatedAt
    name phone externalId metadata status values preferences role embedSrc
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
  embedSrc: string;
}

/** Preferences as DocuSeal shows them: internal keys removed (§5.2). */
function publicPreferences(preferences: unknown): Record<string, unknown> {
  const { message: _message, ...rest } = (preferences ?? {}) as Record<string, unknown>;
  return rest;
}

export function serializeCreatedSubmitter(s: CreatedSubmitterData) {
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
    values: s.values,
    preferences: publicPreferences(s.preferences),
    role: s.role,
    embed_src: s.embedSrc,
  };
}
