/**
 * Starting a bulk send (issue 16; DocuSeal's bulk send from a spreadsheet): the request is read and
 * checked at once (the template, the settings every row shares, the data's size and shape, where
 * each column goes), its rows are stored with their submitters, and the first batch's job is
 * recorded in the same transaction (src/submissions/bulk-send-job.ts carries it out). The GraphQL
 * `createBulkSend` mutation calls it; REST `POST /api/submissions/bulk` runs that mutation.
 */
import type { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { lockAccountCap } from '../db/queries/advisory-locks.ts';
import { insertBulkSendRows } from '../db/queries/bulk-sends.ts';
import { AppError } from '../errors.ts';
import type { SideEffects } from '../events/events.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { MAX_ITEMS } from '../limits.ts';
import { bulkSendBatchJob } from './bulk-send-job.ts';
import { BulkSendSettings, CreateBulkSendRequest } from './bulk-send-input.ts';
import { mapColumns, readBulkSendTable, rowSubmitters } from './bulk-send-rows.ts';
import { readSubmissionsRequest } from './create-submissions-request.ts';
import { checkSettings, readTemplateForCreate } from './create-submissions.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';

export interface CreateBulkSendDeps {
  db: Db;
  effects: Pick<SideEffects, 'transaction'>;
  config: Pick<
    Config,
    'downloadAllowPrivate' | 'downloadMaxBytes' | 'downloadTimeout' | 'images' | 'bulkSendRatePerMinute'
  >;
}

/**
 * Starts a bulk send for `viewer`: checks the request, stores its rows, and records its first
 * batch (nothing is stored when it is refused).
 * @param input the request in DocuSeal's keys (CreateBulkSendRequest), not yet parsed
 * @param viewer.folders the folders the caller's key is limited to (null or absent: every folder)
 * @returns the bulk send's id and its number of rows
 * @throws AppError NOT_FOUND / FORBIDDEN (the template, also outside the key's folders;
 *   readTemplateForCreate), VALIDATION: the template archived or without fields, a setting
 *   POST /submissions would refuse (with its message), the data (readBulkSendTable: size, rows,
 *   columns, CSV syntax), a column that maps nowhere (mapColumns), more than
 *   MAX_ITEMS.activeBulkSends bulk sends of the account running (counted in the inserting transaction,
 *   so it holds for requests at once)
 */
export async function createBulkSend(
  deps: CreateBulkSendDeps,
  viewer: { accountId: number; userId: number; folders?: KeyFolders | null | undefined },
  input: z.input<typeof CreateBulkSendRequest>,
): Promise<{ id: number; totalRows: number }> {
  const request = parseInput(CreateBulkSendRequest, input);
  const template = await readTemplateForCreate(deps.db, {
    id: request.template_id,
    accountId: viewer.accountId,
    folders: viewer.folders ?? null,
  });
  const settings = parseInput(BulkSendSettings, input);
  // The settings as each row's request will carry them: refused now rather than on every row.
  checkSettings(readSubmissionsRequest(deps, { ...settings, submitters: [] }).settings);

  const table = readBulkSendTable(request);
  const targets = mapColumns(table, request.columns, template);
  const rows = table.rows.map((cells) => rowSubmitters(cells, targets, template.roles));

  return deps.effects.transaction(
    async (tx, effects) => {
      // Counted in the inserting transaction, under the account's lock: 20 requests at once cannot
      // all see room for one more (src/db/queries/advisory-locks.ts lockAccountCap; first, as it says).
      await lockAccountCap(tx, 'activeBulkSends', viewer.accountId);
      const active = await tx.bulkSend.count({
        where: { accountId: viewer.accountId, status: { in: ['queued', 'processing'] } },
      });
      if (active >= MAX_ITEMS.activeBulkSends)
        throw new AppError(
          'VALIDATION',
          `too many bulk sends in progress (maximum is ${MAX_ITEMS.activeBulkSends}); wait for one to complete`,
        );
      const bulkSend = await tx.bulkSend.create({
        data: {
          accountId: viewer.accountId,
          templateId: template.id,
          createdByUserId: viewer.userId,
          // As JSON (expire_at as ISO 8601): rowRequest (bulk-send-job.ts) reads it back.
          settings: JSON.parse(JSON.stringify(settings)) as Prisma.InputJsonObject,
          ratePerMinute: request.rate_per_minute ?? deps.config.bulkSendRatePerMinute,
          totalRows: rows.length,
        },
        select: { id: true },
      });
      await insertBulkSendRows(tx, bulkSend.id, rows);
      effects.jobs.push(bulkSendBatchJob(bulkSend.id, 0));
      return { id: bulkSend.id, totalRows: rows.length };
    },
    { timeout: 60_000 },
  );
}
