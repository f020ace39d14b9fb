/**
 * Webhook payloads, `{event_type, timestamp, data}` (reference/docuseal-behaviour.md §5.6;
 * interface spec "Events"). `data` is made by the DocuSeal shapes (src/docuseal-shapes/), the
 * same functions the REST API answers with, from the read models the domain loaders read for the
 * event's account (src/submissions/read-models.ts, src/templates/read-models.ts) — so `data` is
 * what the REST API answers for that record at that moment. No GraphQL and no viewer: a payload
 * is a read of the account's own record, not a request made on anyone's behalf.
 *
 * | events | data |
 * |---|---|
 * | form.viewed, form.started, form.completed, form.declined | formSubmitterData (docuseal-shapes/webhook-data.ts) |
 * | submission.created, submission.completed, submission.expired | GET /submissions/{id} |
 * | submission.archived, template.archived | `{id, archived_at}` |
 * | template.created, template.updated | GET /templates/{id} |
 *
 * The payloads asked for in one turn of the event loop are read together (src/db/turn-batch.ts):
 * one load per kind of record and account, so a burst of events costs a few queries, not a few
 * per event (bench:webhooks).
 */
import type { Db } from '../db/client.ts';
import { turnBatch } from '../db/turn-batch.ts';
import { serializeSubmissionGet } from '../docuseal-shapes/submission.ts';
import { serializeTemplate } from '../docuseal-shapes/template.ts';
import { archivedData, formSubmitterData, type SubmitterClient } from '../docuseal-shapes/webhook-data.ts';
import { recordTypeOf, type EventType } from '../events/events.ts';
import {
  loadFormSubmitterReadModels,
  loadSubmissionArchivedAt,
  loadSubmissionGetReadModels,
  type ReadModelDeps,
  type ReadModelRequest,
} from '../submissions/read-models.ts';
import { loadTemplateArchivedAt, loadTemplateReadModels } from '../templates/read-models.ts';

export interface WebhookPayload {
  event_type: string;
  /** ISO 8601: when the event happened; the same on every attempt. */
  timestamp: string;
  data: Record<string, unknown>;
}

/** What a payload is built for. */
export interface PayloadRequest {
  type: EventType;
  accountId: number;
  recordId: number;
  at: Date;
}

export interface PayloadBuilder {
  /**
   * The payload of an event as the record is now.
   * @returns null when the record no longer exists, is not the account's, or the account is
   *   archived (nothing to send)
   * @throws what the database throws (the job retries)
   */
  build(request: PayloadRequest): Promise<WebhookPayload | null>;
}

/** What payloads are read with. */
export interface PayloadDeps extends ReadModelDeps {
  /** APP_URL, for `submission_url` of the form.* data. */
  appUrl: string;
}

type RecordKey = { accountId: number; id: number };

/**
 * A loader of one kind of read model whose loads of one turn go together: one call of `load`
 * per account among them (each with all that account's ids).
 */
function perTurn<T>(load: (request: ReadModelRequest) => Promise<(T | null)[]>) {
  return turnBatch<RecordKey, T | null>(async (records) => {
    const found: (T | null)[] = records.map(() => null);
    const byAccount = new Map<number, number[]>();
    for (const [i, r] of records.entries()) {
      const positions = byAccount.get(r.accountId) ?? [];
      if (positions.length === 0) byAccount.set(r.accountId, positions);
      positions.push(i);
    }
    await Promise.all(
      [...byAccount].map(async ([accountId, positions]) => {
        const models = await load({ accountId, ids: positions.map((i) => records[i]!.id) });
        for (const [j, i] of positions.entries()) found[i] = models[j] ?? null;
      }),
    );
    return found;
  });
}

/**
 * Builds payloads from the domain read models (module comment).
 * @param deps.files the signer of file URLs (src/documents/file-urls.ts), as the REST answers use
 */
export function createPayloadBuilder(deps: PayloadDeps): PayloadBuilder {
  const { db } = deps;
  const formSubmitters = perTurn((r) => loadFormSubmitterReadModels(deps, r));
  const submissions = perTurn((r) => loadSubmissionGetReadModels(deps, r));
  const submissionsArchived = perTurn((r) => loadSubmissionArchivedAt(deps, r));
  const templates = perTurn((r) => loadTemplateReadModels(deps, r));
  const templatesArchived = perTurn((r) => loadTemplateArchivedAt(deps, r));
  // An archived account's events are not delivered.
  const activeAccounts = turnBatch<number, boolean>(async (ids) => {
    const rows = await db.account.findMany({ where: { id: { in: [...ids] }, archivedAt: null }, select: { id: true } });
    const active = new Set(rows.map((r) => r.id));
    return ids.map((id) => active.has(id));
  });

  const dataFor = async ({
    type,
    accountId,
    recordId: id,
  }: PayloadRequest): Promise<Record<string, unknown> | null> => {
    const record = { accountId, id };
    switch (recordTypeOf(type)) {
      case 'Submitter': {
        const submitter = await formSubmitters.load(record);
        return submitter ? formSubmitterData(submitter, await submitterClient(db, id), deps.appUrl) : null;
      }
      case 'Submission': {
        if (type === 'submission.archived') {
          const submission = await submissionsArchived.load(record);
          return submission ? archivedData(submission) : null;
        }
        const submission = await submissions.load(record);
        return submission ? serializeSubmissionGet(submission) : null;
      }
      case 'Template': {
        if (type === 'template.archived') {
          const template = await templatesArchived.load(record);
          return template ? archivedData(template) : null;
        }
        const template = await templates.load(record);
        return template ? serializeTemplate(template) : null;
      }
    }
  };

  return {
    async build(request) {
      const [active, data] = await Promise.all([activeAccounts.load(request.accountId), dataFor(request)]);
      if (!active || !data) return null;
      return { event_type: request.type, timestamp: request.at.toISOString(), data };
    },
  };
}

/**
 * ip, ua and decline_reason of the form.* data: the submitter's columns, else the latest of its
 * events that recorded an IP and user agent (a view of the form, say).
 */
async function submitterClient(db: Db, submitterId: number): Promise<SubmitterClient> {
  const row = await db.submitter.findUnique({
    where: { id: submitterId },
    select: { ip: true, ua: true, declineReason: true },
  });
  if (!row) return { ip: null, ua: null, declineReason: null };
  if (row.ip && row.ua) return row;
  const events = await db.submissionEvent.findMany({
    where: { submitterId },
    orderBy: [{ eventTimestamp: 'desc' }, { id: 'desc' }],
    take: 20,
    select: { data: true },
  });
  const data = (events
    .map((e) => e.data as { ip?: unknown; ua?: unknown } | null)
    .find((d) => typeof d?.ip === 'string') ?? {}) as { ip?: unknown; ua?: unknown };
  return {
    ip: row.ip ?? (typeof data.ip === 'string' ? data.ip : null),
    ua: row.ua ?? (typeof data.ua === 'string' ? data.ua : null),
    declineReason: row.declineReason,
  };
}
