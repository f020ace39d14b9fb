/**
 * Statuses computed at read time (reference/docuseal-behaviour.md §5.1, §6) and the `values`
 * array DocuSeal returns for a submitter (§5.2).
 */
import type { Field, Role } from '../templates/fields.ts';

/** declined → completed → opened → sent → awaiting (first match wins; §6). */
export function submitterStatus(s: {
  declinedAt: Date | null;
  completedAt: Date | null;
  openedAt: Date | null;
  sentAt: Date | null;
}): string {
  if (s.declinedAt) return 'declined';
  if (s.completedAt) return 'completed';
  if (s.openedAt) return 'opened';
  if (s.sentAt) return 'sent';
  return 'awaiting';
}

/** completed → declined (any submitter) → expired (expire_at passed) → pending (§5.1). */
export function submissionStatus(
  submission: { completedAt: Date | null; expireAt: Date | null },
  submitters: { declinedAt: Date | null }[],
  now = new Date(),
): string {
  if (submission.completedAt) return 'completed';
  if (submitters.some((s) => s.declinedAt)) return 'declined';
  if (submission.expireAt && submission.expireAt.getTime() <= now.getTime()) return 'expired';
  return 'pending';
}

const TITLES: Record<string, string> = {};
const titleize = (type: string) => (TITLES[type] ??= type.charAt(0).toUpperCase() + type.slice(1));

/**
 * `values` as DocuSeal returns them (§5.2): walk the submission's fields in order with a per-type
 * counter across all parties; skip other parties' fields and heading fields; skip fields without a
 * value unless the submitter completed (then every own field appears, missing ones as null). An
 * unnamed field is called "<Type> Field <n>". Attachment values become URLs.
 * @param fileUrl signed URL of a stored file uuid (null when unknown)
 */
export function buildValues(
  fields: Field[],
  submitter: { roleUuid: string; values: Record<string, unknown>; completedAt: Date | null },
  fileUrl: (uuid: string) => string | null,
): { field: string; value: unknown }[] {
  const counters = new Map<string, number>();
  const out: { field: string; value: unknown }[] = [];
  for (const field of fields) {
    const n = (counters.get(field.type) ?? 0) + 1;
    counters.set(field.type, n);
    if (field.type === 'heading' || field.submitter_uuid !== submitter.roleUuid) continue;
    const raw = submitter.values[field.uuid];
    if ((raw === undefined || raw === null || raw === '') && !submitter.completedAt) continue;
    const name = field.name || `${titleize(field.type)} Field ${n}`;
    out.push({ field: name, value: presentValue(field.type, raw, fileUrl) });
  }
  return out;
}

function presentValue(type: string, raw: unknown, fileUrl: (uuid: string) => string | null): unknown {
  if (raw === undefined) return null;
  if (['image', 'signature', 'initials', 'stamp', 'payment', 'kba'].includes(type)) {
    if (typeof raw !== 'string') return null;
    return raw.startsWith('text:') ? raw.slice(5) : fileUrl(raw);
  }
  if (type === 'file') return (Array.isArray(raw) ? raw : [raw]).map((uuid) => fileUrl(String(uuid)));
  return raw;
}

/** The role name of a submitter in its submission's copy of the roles. */
export function roleName(roles: Role[], roleUuid: string): string | null {
  return roles.find((r) => r.uuid === roleUuid)?.name ?? null;
}
