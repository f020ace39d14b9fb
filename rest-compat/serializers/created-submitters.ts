/**
 * The answer of DocuSeal's create routes (POST /submissions, /submissions/init,
 * /templates/{id}/submissions, /submissions/emails) for the submissions the `createSubmissions`
 * mutation made: each submitter in the create shape (serializeCreatedSubmitter, the same object
 * the GraphQL `RestCreatedSubmitter` fragment gives), and each submission's id, expire_at and
 * created_at.
 *
 * Why not the fragment: resolving it through Pothos and Prisma (two queries, ~20 fields per
 * submitter) was most of a create request's CPU time (bench/submissions.ts, issue 4). The route
 * still runs the mutation, which holds every rule and returns the ids; only reading back what it
 * wrote is done here, in one plain statement. The rules of the derived keys are the GraphQL
 * fields' own functions: submitterStatus, roleName, buildValues (attachments as signed URLs).
 */
import { sqlPool } from '../../src/db/client.ts';
import type { GraphQLContext } from '../../src/graphql/context.ts';
import { buildValues, roleName, submitterStatus } from '../../src/submissions/status.ts';
import type { Field, Role } from '../../src/templates/fields.ts';
import type { CreatedSubmitterData } from './submitter.ts';

/** `timestamp(3)` (UTC) as the DateTime scalar writes it: 2026-11-21T15:54:27.000Z. */
const ts = (column: string) => `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * $1: submission ids. One row per submission: the keys the answer needs, the parts of the
 * submission's copy of the fields that `values` uses, and its submitters by id.
 */
const READ_CREATED = {
  name: 'rest_created_submitters',
  text: `
    SELECT s.id, ${ts('s.expire_at')} AS "expireAt", ${ts('s.created_at')} AS "createdAt", s.template_submitters AS roles,
           (SELECT COALESCE(json_agg(json_build_object('uuid', f->>'uuid', 'submitter_uuid', f->>'submitter_uuid', 'name', f->>'name', 'type', f->>'type')), '[]'::json)
              FROM jsonb_array_elements(s.template_fields) f) AS fields,
           (SELECT json_agg(json_build_object(
                     'id', x.id, 'submissionId', x.submission_id, 'uuid', x.uuid, 'email', x.email, 'slug', x.slug,
                     'sentAt', ${ts('x.sent_at')}, 'openedAt', ${ts('x.opened_at')}, 'completedAt', ${ts('x.completed_at')},
                     'declinedAt', ${ts('x.declined_at')}, 'createdAt', ${ts('x.created_at')}, 'updatedAt', ${ts('x.updated_at')},
                     'name', x.name, 'phone', x.phone, 'externalId', x.external_id, 'metadata', x.metadata,
                     'preferences', x.preferences, 'roleUuid', x.role_uuid, 'values', x.values) ORDER BY x.id)
              FROM submitters x WHERE x.submission_id = s.id) AS submitters
      FROM submissions s
     WHERE s.id = ANY($1::int[])
     ORDER BY s.id`,
};

type Timestamp = string | null;

interface SubmitterRow {
  id: number;
  submissionId: number;
  uuid: string;
  email: string | null;
  slug: string;
  sentAt: Timestamp;
  openedAt: Timestamp;
  completedAt: Timestamp;
  declinedAt: Timestamp;
  createdAt: string;
  updatedAt: string;
  name: string | null;
  phone: string | null;
  externalId: string | null;
  metadata: unknown;
  preferences: unknown;
  roleUuid: string;
  values: Record<string, unknown> | null;
}

interface SubmissionRow {
  id: number;
  expireAt: Timestamp;
  createdAt: string;
  roles: Role[];
  /** Only uuid, submitter_uuid, name and type of each field: what buildValues reads. */
  fields: Field[];
  submitters: SubmitterRow[] | null;
}

/** Field types whose values are stored file uuids (buildValues shows them as signed URLs). */
const FILE_TYPES = new Set(['image', 'signature', 'initials', 'stamp', 'payment', 'kba', 'file']);

const at = (value: Timestamp) => (value === null ? null : new Date(value));

/**
 * The submissions `ids` (made by this request's createSubmissions, so the caller's) and all their
 * submitters, in id order, as the create routes answer them.
 */
export async function readCreatedSubmissions(
  context: Pick<GraphQLContext, 'db' | 'files' | 'loaders' | 'config'>,
  ids: number[],
): Promise<{ submissions: { id: number; expireAt: Timestamp; createdAt: string }[]; submitters: CreatedSubmitterData[] }> {
  const { rows } = await sqlPool(context.db).query<SubmissionRow>({ ...READ_CREATED, values: [ids] });
  // Stored files named by attachment values (a prefilled signature or image), in one lookup.
  const uuids = new Set<string>();
  for (const submission of rows) {
    for (const submitter of submission.submitters ?? []) {
      for (const field of submission.fields) {
        if (field.submitter_uuid !== submitter.roleUuid || !FILE_TYPES.has(field.type)) continue;
        const value = submitter.values?.[field.uuid];
        for (const item of Array.isArray(value) ? value : [value]) if (typeof item === 'string') uuids.add(item);
      }
    }
  }
  const files = uuids.size > 0 ? await context.loaders.storedFileByUuid.loadMany([...uuids]) : [];
  const fileByUuid = new Map([...uuids].map((uuid, i) => [uuid, files[i]]));
  const fileUrl = (uuid: string) => {
    const file = fileByUuid.get(uuid);
    return file && !(file instanceof Error) ? context.files.url(file) : null;
  };

  const submitters: CreatedSubmitterData[] = [];
  for (const submission of rows) {
    for (const s of submission.submitters ?? []) {
      submitters.push({
        id: s.id,
        submissionId: s.submissionId,
        uuid: s.uuid,
        email: s.email,
        slug: s.slug,
        sentAt: s.sentAt,
        openedAt: s.openedAt,
        completedAt: s.completedAt,
        declinedAt: s.declinedAt,
        createdAt: s.createdAt,
        updatedAt: s.updatedAt,
        name: s.name,
        phone: s.phone,
        externalId: s.externalId,
        metadata: s.metadata,
        status: submitterStatus({ declinedAt: at(s.declinedAt), completedAt: at(s.completedAt), openedAt: at(s.openedAt), sentAt: at(s.sentAt) }),
        values: buildValues(submission.fields, { roleUuid: s.roleUuid, values: s.values ?? {}, completedAt: at(s.completedAt) }, fileUrl),
        preferences: s.preferences,
        role: roleName(submission.roles, s.roleUuid),
        embedSrc: `${context.config.appUrl}/s/${s.slug}`,
      });
    }
  }
  return { submissions: rows.map(({ id, expireAt, createdAt }) => ({ id, expireAt, createdAt })), submitters };
}
