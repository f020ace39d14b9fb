/**
 * The answer of DocuSeal's create routes (POST /submissions, /submissions/init,
 * /templates/{id}/submissions, /submissions/emails) for the submissions the `createSubmissions`
 * mutation made: each submitter in the create shape (serializeCreatedSubmitter, the same object
 * the GraphQL `RestCreatedSubmitter` fragment gives), and each submission's id, expire_at and
 * created_at.
 *
 * Why not the fragment: resolving it through Pothos and Prisma (two queries, ~20 fields per
 * submitter) was most of a create request's CPU time (bench/submissions.ts, issue 4). The route
 * still runs the mutation, which holds every rule and returns the ids; the answer is made from
 * the rows its statement stored and returned (recordCreated, in the same request), with no
 * read-back. The rules of the derived keys are the GraphQL fields' own functions:
 * submitterStatus, roleName, buildValues (attachments as signed URLs).
 * test/submissions-create-sql.test.ts checks the answer against the fragment, key for key.
 */
import type { GraphQLContext } from '../../src/graphql/context.ts';
import { createdInRequest } from '../../src/submissions/create-submissions.ts';
import { buildValues, roleName, submitterStatus } from '../../src/submissions/status.ts';
import type { CreatedSubmitterData } from '../../src/docuseal-shapes/submitter.ts';

/** Field types whose values are stored file uuids (buildValues shows them as signed URLs). */
const FILE_TYPES = new Set(['image', 'signature', 'initials', 'stamp', 'payment', 'kba', 'file']);

const at = (value: string | null) => (value === null ? null : new Date(value));

/**
 * The submissions `ids` this request's createSubmissions made, and all their submitters in id
 * order, as the create routes answer them.
 * @throws Error when the mutation did not run in this context (a programming error: a 500)
 */
export async function readCreatedSubmissions(
  context: GraphQLContext,
  ids: number[],
): Promise<{
  submissions: { id: number; expireAt: string | null; createdAt: string }[];
  submitters: CreatedSubmitterData[];
}> {
  const created = createdInRequest(context, ids);
  if (!created)
    throw new Error(`readCreatedSubmissions: submissions ${ids.join(', ')} were not created in this request`);
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
  const files = uuids.size > 0 ? await context.loaders.storedFileByUuid.loadMany([...uuids]) : [];
  const fileByUuid = new Map([...uuids].map((uuid, i) => [uuid, files[i]]));
  const fileUrl = (uuid: string) => {
    const file = fileByUuid.get(uuid);
    return file && !(file instanceof Error) ? context.files.url(file) : null;
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
          fileUrl,
        ),
        preferences: s.preferences,
        role: roleName(submission.roles, s.roleUuid),
        embedSrc: `${context.config.appUrl}/s/${s.slug}`,
      });
    }
  }
  const submissions = created.map((c) => ({ id: c.id, expireAt: c.expireAt, createdAt: c.createdAt }));
  return { submissions, submitters };
}
