/**
 * Webhook payloads, `{event_type, timestamp, data}` (reference/docuseal-behaviour.md §5.6;
 * interface spec "Events"). `data` is made by the DocuSeal shapes (src/docuseal-shapes/), the
 * same functions the REST API answers with, from read models that named GraphQL operations load
 * in-process with a context for the event's account — so `data` is what the REST API answers
 * for that record at that moment.
 *
 * | events | data |
 * |---|---|
 * | form.viewed, form.started, form.completed, form.declined | formSubmitterData (src/docuseal-shapes/webhook-data.ts) |
 * | submission.created, submission.completed, submission.expired | GET /submissions/{id} |
 * | submission.archived, template.archived | `{id, archived_at}` |
 * | template.created, template.updated | GET /templates/{id} |
 */
import { execute, Kind, parse, validate, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import {
  SUBMISSION_GET_FRAGMENT,
  serializeSubmissionGet,
  type SubmissionGetData,
} from '../docuseal-shapes/submission.ts';
import { serializeTemplate, TEMPLATE_FRAGMENT, type TemplateData } from '../docuseal-shapes/template.ts';
import {
  archivedData,
  FORM_SUBMITTER_FRAGMENT,
  formSubmitterData,
  type FormSubmitterData,
  type SubmitterClient,
} from '../docuseal-shapes/webhook-data.ts';
import type { Db } from '../db/client.ts';
import { createAccountViewerLookup } from '../db/queries/account-viewers.ts';
import type { AppError } from '../errors.ts';
import { accountAndUserFromRow } from '../accounts/authenticate.ts';
import { recordTypeOf, type EventType } from '../events/events.ts';
import type { ContextFactory, GraphQLContext } from '../graphql/context.ts';
import { findAppError } from '../graphql/errors.ts';

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

const FORM_OPERATION = /* GraphQL */ `
  query WebhookFormSubmitter($id: Int!) { submitter(id: $id) { ...WebhookFormSubmitter } }
  ${FORM_SUBMITTER_FRAGMENT}
`;

const SUBMISSION_OPERATION = /* GraphQL */ `
  query WebhookSubmission($id: Int!) { submission(id: $id) { ...RestSubmissionGet } }
  ${SUBMISSION_GET_FRAGMENT}
`;

const SUBMISSION_ARCHIVED_OPERATION = /* GraphQL */ `
  query WebhookSubmissionArchived($id: Int!) { submission(id: $id) { id archivedAt } }
`;

const TEMPLATE_OPERATION = /* GraphQL */ `
  query WebhookTemplate($id: Int!) { template(id: $id) { ...RestTemplate } }
  ${TEMPLATE_FRAGMENT}
`;

const TEMPLATE_ARCHIVED_OPERATION = /* GraphQL */ `
  query WebhookTemplateArchived($id: Int!) { template(id: $id) { id archivedAt } }
`;

interface PreparedOperation {
  document: DocumentNode;
  name: string;
}

interface PreparedOperations {
  form: PreparedOperation;
  submission: PreparedOperation;
  submissionArchived: PreparedOperation;
  template: PreparedOperation;
  templateArchived: PreparedOperation;
}

/** Gives the GraphQL context to build an account's payloads with, or null (unknown or archived account). */
export type AccountContexts = (accountId: number) => Promise<GraphQLContext | null>;

export interface PayloadBuilder {
  /**
   * The payload of an event as the record is now.
   * @returns null when the record no longer exists or is not the account's (nothing to send)
   * @throws what the GraphQL execution throws unexpectedly (the job retries)
   */
  build(request: PayloadRequest): Promise<WebhookPayload | null>;
}

const preparedBySchema = new WeakMap<GraphQLSchema, PreparedOperations>();

/** The operations parsed and validated against `schema`, once per schema. @throws Error naming an invalid operation */
function preparedOperations(schema: GraphQLSchema): PreparedOperations {
  let prepared = preparedBySchema.get(schema);
  if (prepared) return prepared;
  const prepare = (source: string): PreparedOperation => {
    const document = parse(source);
    const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
    const name = operation && 'name' in operation ? operation.name?.value : undefined;
    const errors = validate(schema, document);
    if (!name || errors.length > 0)
      throw new Error(
        `webhook payload operation ${name ?? '(unnamed)'} is invalid: ${errors.map((e) => e.message).join('; ')}`,
      );
    return { document, name };
  };
  prepared = {
    form: prepare(FORM_OPERATION),
    submission: prepare(SUBMISSION_OPERATION),
    submissionArchived: prepare(SUBMISSION_ARCHIVED_OPERATION),
    template: prepare(TEMPLATE_OPERATION),
    templateArchived: prepare(TEMPLATE_ARCHIVED_OPERATION),
  };
  preparedBySchema.set(schema, prepared);
  return prepared;
}

/**
 * Contexts acting for an account without a request: the service's context factory, with the
 * account's first user as the viewer (there is no API key behind it; apiKeyId 0 is no key's id).
 * Null for an unknown or archived account, or one without a user that is not archived. The
 * look-ups of the events dispatched at once go in one statement (src/db/turn-batch.ts), and the
 * payloads of one account asked for in the same turn of the event loop are built in one context:
 * its per-request loaders (src/graphql/loaders.ts) then fetch for all of them at once. They read
 * the records at the same moment, so sharing the loaders' caches changes no payload.
 */
export function createAccountContexts(contextFactory: ContextFactory, db: Db): AccountContexts {
  const viewers = createAccountViewerLookup(db);
  // The contexts asked for in this turn, by account; forgotten once the turn's I/O callbacks have run.
  let thisTurn: Map<number, Promise<GraphQLContext | null>> | undefined;
  const contextFor: AccountContexts = async (accountId) => {
    const row = await viewers.load(accountId);
    if (!row) return null;
    const base = await contextFactory({ header: () => undefined });
    return { ...base, viewer: { ...accountAndUserFromRow(row), apiKeyId: 0 } };
  };
  return (accountId) => {
    if (!thisTurn) {
      const turn = new Map<number, Promise<GraphQLContext | null>>();
      thisTurn = turn;
      setImmediate(() => {
        if (thisTurn === turn) thisTurn = undefined;
      });
    }
    let context = thisTurn.get(accountId);
    if (!context) {
      context = contextFor(accountId);
      thisTurn.set(accountId, context);
    }
    return context;
  };
}

/**
 * Builds payloads with the operations of `schema` (parsed and validated on first use) in the
 * contexts `contextFor` gives.
 */
export function createPayloadBuilder(deps: {
  schema: GraphQLSchema;
  db: Db;
  appUrl: string;
  contextFor: AccountContexts;
}): PayloadBuilder {
  /** The operation's data, or null when the record is unknown or another account's. */
  const run = async <T>(operation: PreparedOperation, context: GraphQLContext, id: number): Promise<T | null> => {
    const result = (await execute({
      schema: deps.schema,
      document: operation.document,
      operationName: operation.name,
      variableValues: { id },
      contextValue: context,
    })) as ExecutionResult;
    if (result.errors?.length) {
      const appError = result.errors.map(findAppError).find((e): e is AppError => e !== undefined);
      if (appError && (appError.code === 'NOT_FOUND' || appError.code === 'FORBIDDEN')) return null;
      throw result.errors[0]!.originalError ?? result.errors[0];
    }
    return result.data as T;
  };

  const dataFor = async (request: PayloadRequest, context: GraphQLContext): Promise<Record<string, unknown> | null> => {
    const { form, submission, submissionArchived, template, templateArchived } = preparedOperations(deps.schema);
    const { type, recordId } = request;
    switch (recordTypeOf(type)) {
      case 'Submitter': {
        const result = await run<{ submitter: FormSubmitterData }>(form, context, recordId);
        if (!result) return null;
        return formSubmitterData(result.submitter, await submitterClient(deps.db, recordId), deps.appUrl);
      }
      case 'Submission': {
        if (type === 'submission.archived') {
          const result = await run<{ submission: { id: number; archivedAt: string | null } }>(
            submissionArchived,
            context,
            recordId,
          );
          return result ? archivedData(result.submission) : null;
        }
        const result = await run<{ submission: SubmissionGetData }>(submission, context, recordId);
        return result ? serializeSubmissionGet(result.submission) : null;
      }
      case 'Template': {
        if (type === 'template.archived') {
          const result = await run<{ template: { id: number; archivedAt: string | null } }>(
            templateArchived,
            context,
            recordId,
          );
          return result ? archivedData(result.template) : null;
        }
        const result = await run<{ template: TemplateData }>(template, context, recordId);
        return result ? serializeTemplate(result.template) : null;
      }
    }
  };

  return {
    async build(request) {
      const context = await deps.contextFor(request.accountId);
      if (!context) return null;
      const data = await dataFor(request, context);
      if (!data) return null;
      return { event_type: request.type, timestamp: request.at.toISOString(), data };
    },
  };
}

/**
 * ip, ua and decline_reason, which the GraphQL schema does not carry: the submitter's columns,
 * else the latest of its events that recorded an IP and user agent (a view of the form, say).
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
