/**
 * The read models of the answer of DocuSeal's create routes (POST /submissions, /submissions/init,
 * /templates/{id}/submissions, /submissions/emails; reference/docuseal-behaviour.md §5.3) for the
 * submissions createSubmissionsForRequest made: each submitter in the create shape
 * (serializeCreatedSubmitter, the same object the GraphQL `RestCreatedSubmitter` fragment gives),
 * and each submission's id, expire_at and created_at.
 *
 * Why not the fragment: resolving it through Pothos and Prisma (two queries, ~20 fields per
 * submitter) was most of a create request's CPU time (bench/submissions.ts, issue 4). The answer
 * is made from the rows the service's statement stored and returned (CreatedSubmission), with no
 * read-back. The rules of the derived keys are the GraphQL fields' own functions:
 * submitterStatus, roleName, buildValues (attachments as signed URLs, typed signatures' text).
 * test/submissions-create-sql.test.ts checks the answer against the fragment, key for key. The
 * shape itself is src/docuseal-shapes/submitter.ts's serializeCreatedSubmitter.
 */
import { typedTextOf } from '../documents/typed-signature.ts';
import type { OneOffSubmissionData } from '../docuseal-shapes/one-off-submission.ts';
import type { CreatedSubmitterData } from '../docuseal-shapes/submitter.ts';
import type { CreatedOneOffSubmission } from './create-one-off-submission.ts';
import type { CreatedSubmission } from './create-submissions.ts';
import { buildValues, roleName, submissionStatus, submitterStatus } from './status.ts';

/** What the answer needs besides the rows: stored files and their signed URLs, the service's URL. */
export interface CreatedSubmittersDeps {
  /** The stored files of these uuids, in order (an Error or null for one that is unknown). */
  filesByUuid(
    uuids: string[],
  ): Promise<readonly ({ uuid: string; filename: string; metadata: unknown } | Error | null)[]>;
  /** A stored file's signed URL (src/documents/file-urls.ts). */
  fileUrl(file: { uuid: string; filename: string }): string;
  /** APP_URL, for `embed_src` (`{appUrl}/s/{slug}`). */
  appUrl: string;
}

/** Field types whose values are stored file uuids (buildValues shows them as signed URLs). */
const FILE_TYPES = new Set(['image', 'signature', 'initials', 'stamp', 'payment', 'kba', 'file']);

const at = (value: string | null) => (value === null ? null : new Date(value));

/**
 * The submissions a create request made (createSubmissionsForRequest's result, in request
 * order), and all their submitters in id order, as the create routes answer them (§5.3).
 */
export async function createdSubmittersAnswer(
  deps: CreatedSubmittersDeps,
  created: CreatedSubmission[],
): Promise<{
  submissions: { id: number; expireAt: string | null; createdAt: string }[];
  submitters: CreatedSubmitterData[];
}> {
  // Stored files named by attachment values (a prefilled signature or image), in one lookup.
  const uuids = new Set<string>();
  for (const submission of created) {
    for (const submitter of submission.submitters) {
      for (const field of submission.fields) {
        if (field.submitter_uuid !== submitter.roleUuid || !FILE_TYPES.has(field.type)) continue;
        const value = submitter.values[field.uuid];
        for (const item of Array.isArray(value) ? value : [value]) if (typeof item === 'string') uuids.add(item);
      }
    }
  }
  const files = uuids.size > 0 ? await deps.filesByUuid([...uuids]) : [];
  const fileByUuid = new Map([...uuids].map((uuid, i) => [uuid, files[i]]));
  const fileOf = (uuid: string) => {
    const file = fileByUuid.get(uuid);
    return file && !(file instanceof Error) ? { url: deps.fileUrl(file), typedText: typedTextOf(file.metadata) } : null;
  };

  const submitters: CreatedSubmitterData[] = [];
  for (const submission of created) {
    for (const s of submission.submitters) {
      submitters.push({
        id: s.id,
        submissionId: s.submissionId,
        uuid: s.uuid,
        email: s.email,
        slug: s.slug,
        sentAt: s.sentAt,
        openedAt: null,
        completedAt: s.completedAt,
        declinedAt: null,
        createdAt: s.createdAt,
        updatedAt: s.updatedAt,
        name: s.name,
        phone: s.phone,
        externalId: s.externalId,
        metadata: s.metadata,
        status: submitterStatus({
          declinedAt: null,
          completedAt: at(s.completedAt),
          openedAt: null,
          sentAt: at(s.sentAt),
        }),
        values: buildValues(
          submission.fields,
          { roleUuid: s.roleUuid, values: s.values, completedAt: at(s.completedAt) },
          fileOf,
        ),
        preferences: s.preferences,
        role: roleName(submission.roles, s.roleUuid),
        language: s.language,
        embedSrc: `${deps.appUrl}/s/${s.slug}`,
      });
    }
  }
  const submissions = created.map((c) => ({ id: c.id, expireAt: c.expireAt, createdAt: c.createdAt }));
  return { submissions, submitters };
}

/**
 * The read model of a one-off answer (POST /submissions/pdf|docx|html): what createOneOffSubmission
 * made, with its submitters in the create shape (createdSubmittersAnswer) and its status as of now.
 */
export function oneOffSubmissionReadModel(
  created: CreatedOneOffSubmission,
  submitters: CreatedSubmitterData[],
): OneOffSubmissionData {
  const { submission } = created;
  return {
    id: submission.id,
    name: created.name,
    source: created.source,
    submittersOrder: created.submittersOrder,
    status: submissionStatus(
      {
        completedAt: submitters.length > 0 && submitters.every((s) => s.completedAt) ? new Date() : null,
        expireAt: at(submission.expireAt),
      },
      [],
    ),
    submitters,
    schema: created.schema,
    fields: submission.fields,
    expireAt: submission.expireAt,
    createdAt: submission.createdAt,
  };
}
