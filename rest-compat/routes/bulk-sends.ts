/**
 * Bulk send over REST (a Signet extension, docs/compatibility.md "Bulk send"; DocuSeal's is a form
 * of its web app with no API): `POST /submissions/bulk` (or `/templates/{id}/submissions/bulk`)
 * starts one with the `createBulkSend` mutation and answers 202 with its progress; `GET
 * /submissions/bulk/{id}` answers its progress and the report of its rejected rows. The body is read
 * against CreateBulkSendRequest (src/submissions/bulk-send-input.ts) as POST /submissions' body is.
 */
import { BULK_SEND_FRAGMENT, type BulkSendData, serializeBulkSend } from '../../src/docuseal-shapes/bulk-send.ts';
import { AppError } from '../../src/errors.ts';
import { CreateBulkSendRequest } from '../../src/submissions/bulk-send-input.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';
import { bodyObject, pathId, restInput } from '../params.ts';

/** The template: the path's id, else the body's `template_id` (as POST /submissions reads it). */
function templateIdOf(request: RestRequest, body: Record<string, unknown>): number {
  if (request.params.id !== undefined) return pathId(request, 'Template');
  const raw = body.template_id;
  if (raw === undefined || raw === null || raw === '') throw new AppError('VALIDATION', 'Template not found');
  const id = Number(raw);
  if (!Number.isInteger(id) || id <= 0) throw new AppError('NOT_FOUND', `Template ${String(raw)} not found`);
  return id;
}

const createOperation = /* GraphQL */ `
  mutation RestCreateBulkSend($input: CreateBulkSendInput!) {
    createBulkSend(input: $input) { bulkSend { ...RestBulkSend } }
  }
  ${BULK_SEND_FRAGMENT}
`;

const create = (path: string): RestRoute => ({
  method: 'POST',
  path,
  operation: createOperation,
  variables: (request) => {
    const body = bodyObject(request);
    return {
      input: {
        ...restInput(CreateBulkSendRequest, body, { omit: ['template_id'] }),
        templateId: templateIdOf(request, body),
      },
    };
  },
  serialize: ({ createBulkSend }: { createBulkSend: { bulkSend: BulkSendData } }) =>
    serializeBulkSend(createBulkSend.bulkSend),
  // Accepted: the rows are made into submissions in the background (GET answers the progress).
  status: 202,
});

export const bulkSendRoutes: RestRoute[] = [
  create('/submissions/bulk'),
  create('/templates/:id/submissions/bulk'),
  {
    method: 'GET',
    path: '/submissions/bulk/:id',
    operation: /* GraphQL */ `
      query RestBulkSend($id: Int!) { bulkSend(id: $id) { ...RestBulkSend } }
      ${BULK_SEND_FRAGMENT}
    `,
    variables: (request) => ({ id: pathId(request, 'Bulk send') }),
    serialize: ({ bulkSend }: { bulkSend: BulkSendData }) => serializeBulkSend(bulkSend),
  },
];
