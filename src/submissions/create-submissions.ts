/**
 * Creating submissions from a template (reference/docuseal-behaviour.md §7): map request
 * submitters to template roles (§7.2), keep the submission's own copy of roles, fields and
 * documents, prefill values (§7.5), decide who is sent the request now (§7.3), mark `completed`
 * parties (api_complete_form; values of their fields whose conditions are not met dropped, as
 * DocuSeal). One transaction for all submissions of a request.
 *
 * What a creation causes is written by the same statement (the outbox, src/jobs/outbox.ts): the
 * requests of who is sent now (emails, SMS), the expiry, the documents of parties created
 * completed, and submission.created. The ids are drawn from their sequences first (one statement
 * for the creates of a turn), so these jobs are made here, by the same functions as everywhere.
 *
 * A one-off submission's template is not stored until its submission is: planSubmissions plans on
 * roles and fields held in memory, and insertPlannedSubmissions writes in the caller's transaction
 * (src/submissions/create-one-off-submission.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { inKeyFolders, type KeyFolders, outsideFoldersError } from '../accounts/key-scopes.ts';
import type { Db } from '../db/client.ts';
import {
  drawSubmissionIds,
  type InsertedRow,
  insertSubmission,
  insertSubmissionIn,
  readTemplateRow,
  type SubmissionIds,
  type TemplateRow,
} from '../db/queries/submission-create.ts';
import { perClient } from '../db/turn-batch.ts';
import { loadFileInput } from '../documents/load-file-input.ts';
import type { FileStorage } from '../documents/storage.ts';
import { storeFile } from '../documents/store-file.ts';
import { isTypedSignatureLength, renderTypedSignature, typedSignatureText } from '../documents/typed-signature.ts';
import { AppError } from '../errors.ts';
import { storedLanguage } from '../i18n/signer-language.ts';
import { ATTACHMENT_FIELD_TYPES } from '../field-types.ts';
import { effectJobs, noEffects, type Effects, type SideEffects } from '../events/events.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { checkValuesSize, MAX_ITEMS, valueSizeMessage } from '../limits.ts';
import { outboxRows } from '../jobs/outbox.ts';
import type { Reminders } from '../notifications/reminder-settings.ts';
import { completionJob } from '../signing/complete-submission.ts';
import { readDrawableImage, UnreadableImageError, type ImageLimits } from '../documents/drawable-image.ts';
import { checkFieldPattern } from '../templates/field-pattern.ts';
import { noFieldsError } from '../templates/template-warnings.ts';
import {
  parseFieldValue,
  replaceTodayPlaceholders,
  TODAY_PLACEHOLDER,
  UnparsableValue,
} from '../signing/format-values.ts';
import { parseFields, parseRoles, type Field, type Role } from '../templates/fields.ts';
import { dropHiddenValues } from '../templates/field-conditions.ts';
import { matchesField } from '../templates/field-keys.ts';
import { mergeRoles } from './merge-roles.ts';
import { expiryJobs, requestJobs } from './send-requests.ts';
import {
  checkSubmitterContact,
  checkUniqueRoles,
  isValidEmailList,
  type FieldConfig,
  type SubmitterInput,
} from './submitter-input.ts';

export type SubmittersOrder = 'preserved' | 'random';

/** Settings that apply to every submitter of a submission unless the submitter overrides them. */
export interface SubmissionSettings {
  sendEmail: boolean;
  sendSms: boolean;
  order: SubmittersOrder;
  completedRedirectUrl?: string | undefined;
  bccCompleted?: string | undefined;
  replyTo?: string | undefined;
  message?: { subject?: string | undefined; body?: string | undefined } | undefined;
  expireAt?: Date | null | undefined;
  name?: string | undefined;
  variables?: Record<string, unknown> | undefined;
  /** Every party's `go_to_last` preference unless its own entry has one (Submitters.normalize_preferences). */
  goToLast?: boolean | undefined;
  /** Stored as given; only false reaches here (true is refused: refuseTwoFactor). */
  requireEmail2fa?: boolean | undefined;
  requirePhone2fa?: boolean | undefined;
  /** Reminder settings of the submission's own (checked), kept as its `preferences.reminders`; none: the account's. */
  reminders?: Reminders | undefined;
  /** The submission's `language` (a code of src/i18n/languages.ts): its parties' without one of their own. */
  language?: string | null | undefined;
}

export interface SubmissionRequest {
  submitters: SubmitterInput[];
  /** Where these submitters are in the request, for messages ("submitters"). */
  path: string;
}

export interface CreateSubmissionsOptions {
  accountId: number;
  userId: number;
  /**
   * The folders the caller's key is limited to (src/accounts/key-scopes.ts); null or absent: every
   * folder. The template must be in them (else FORBIDDEN, as another account's). On the usual path
   * the folder judged is the one of the template version the write requires, so a template moved
   * meanwhile is judged again.
   */
  folders?: KeyFolders | null | undefined;
  templateId: number;
  /** "api" for API requests (§5.1); "link" for a template's shared link (no request is sent). */
  source: string;
  settings: SubmissionSettings;
  submissions: SubmissionRequest[];
  /** Downloads for attachment values (`default_value` / `values` of signature, image, …). */
  download: { allowPrivate: boolean; maxBytes: number; timeoutMs: number };
  /** Limits of image values (signature, initials, image, stamp): IMAGE_MAX_MB, IMAGE_MAX_MEGAPIXELS. */
  images: ImageLimits;
  /**
   * When each signature request (email or SMS job) the creation sends becomes due, called once per
   * request in the order they are written; default: now. A bulk send paces its invitations with it
   * (src/submissions/bulk-send-job.ts).
   */
  requestsDueAt?: (() => Date) | undefined;
}

export interface CreatedSubmission {
  id: number;
  /** Submitter ids in request order. */
  submitterIds: number[];
  /** As stored: expire_at (ISO 8601, ms, UTC) or null. */
  expireAt: string | null;
  /** As stored: created_at (ISO 8601, ms, UTC). */
  createdAt: string;
  /** The submission's copy of the roles and fields, as stored. */
  roles: Role[];
  fields: Field[];
  /** The submitters as stored, in id order (JSON columns as PostgreSQL returns them: jsonb's key order). */
  submitters: CreatedSubmitter[];
}

/** A submitter row as INSERT_SUBMISSION stored it; timestamps ISO 8601 (ms, UTC) or null. */
export interface CreatedSubmitter {
  id: number;
  submissionId: number;
  uuid: string;
  slug: string;
  email: string | null;
  name: string | null;
  phone: string | null;
  externalId: string | null;
  roleUuid: string;
  metadata: unknown;
  preferences: unknown;
  /** The party's own language (a code of src/i18n/languages.ts), or null. */
  language: string | null;
  values: Record<string, unknown>;
  sentAt: string | null;
  completedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

const SLUG_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789';

/** Random bytes drawn in blocks (one call to the system's generator per 4 KB, not per slug). */
let randomPool = Buffer.alloc(0);
let randomOffset = 0;

/** A random slug (14 characters; the submitter's is the capability in its signing link). */
export function generateSubmissionSlug(length = 14): string {
  if (randomOffset + length > randomPool.length) {
    randomPool = randomBytes(Math.max(4096, length));
    randomOffset = 0;
  }
  let slug = '';
  for (let i = 0; i < length; i += 1) slug += SLUG_ALPHABET[randomPool[randomOffset + i]! % SLUG_ALPHABET.length];
  randomOffset += length;
  return slug;
}

/** A template as last read: its version (xmin), owner, and roles and fields parsed. */
interface KnownTemplate {
  version: string;
  accountId: number;
  folderId: number | null;
  fields: Field[];
  roles: Role[];
}

/** Recently used templates, per database client, by template id. */
const knownTemplates = perClient((_db: Db) => new Map<number, KnownTemplate>());
const KNOWN_TEMPLATES_KEPT = 256;

/** The template as last read by readTemplate on `db`, if it was (not checked against the database). */
function knownTemplate(db: Db, templateId: number): KnownTemplate | undefined {
  return knownTemplates(db).get(templateId);
}

/**
 * A template's row for createSubmissions, its roles and fields parsed (templates/fields.ts). Those
 * of the same row version as last time are not sent or parsed again: a template is usually used
 * for many submissions, and its fields are most of the work of reading it. The version is the
 * row's xmin, which every update of the row changes, whoever makes it. The parsed arrays are
 * shared: callers copy before changing (planSubmission).
 */
async function readTemplate(
  db: Db,
  templateId: number,
): Promise<(Omit<TemplateRow, 'fields' | 'submitters'> & { fields: Field[]; roles: Role[] }) | undefined> {
  const cache = knownTemplates(db);
  const known = cache.get(templateId);
  const row = await readTemplateRow(db, templateId, known?.version ?? null);
  if (!row) {
    cache.delete(templateId);
    return undefined;
  }
  let parsed = known && row.fields === null && row.version === known.version ? known : undefined;
  if (!parsed)
    parsed = {
      version: row.version,
      accountId: row.accountId,
      folderId: row.folderId,
      fields: parseFields(row.fields),
      roles: parseRoles(row.submitters),
    };
  cache.delete(templateId);
  if (cache.size >= KNOWN_TEMPLATES_KEPT) cache.delete(cache.keys().next().value!);
  cache.set(templateId, parsed);
  return {
    id: row.id,
    accountId: row.accountId,
    folderId: row.folderId,
    archived: row.archived,
    version: row.version,
    fields: parsed.fields,
    roles: parsed.roles,
  };
}

/** What createSubmissions needs: the database, file storage, and where its effects go once committed. */
export interface CreateDeps {
  db: Db;
  storage: FileStorage;
  effects: Pick<SideEffects, 'committed'>;
}

/**
 * Creates the submissions of one request, with what they cause (see the module comment).
 * @throws AppError NOT_FOUND / FORBIDDEN (template), VALIDATION with DocuSeal's messages (§7.1);
 *   a template without fields: VALIDATION noFieldsError (src/templates/template-warnings.ts)
 */
export async function createSubmissions(
  deps: CreateDeps,
  options: CreateSubmissionsOptions,
): Promise<CreatedSubmission[]> {
  const { db } = deps;
  // The usual request (one submission of a template used before, nothing to store) plans with the
  // template's roles and fields as last read and writes in one statement that inserts only if the
  // template is still that version, the caller's and not archived. Anything else (a refusal, a
  // changed template, files to store) takes the path below, which reads the template first.
  const known = knownTemplate(db, options.templateId);
  if (
    known &&
    known.accountId === options.accountId &&
    inKeyFolders(known.folderId, options.folders ?? null) &&
    known.fields.length > 0 &&
    options.submissions.length === 1
  ) {
    let plan: SubmissionPlan | undefined;
    try {
      checkSettings(options.settings);
      plan = await planRequest(deps, options, options.submissions[0]!, known);
    } catch (error) {
      // A refusal judged on the template as last read: judged again below, on the template as it is.
      if (!(error instanceof AppError)) throw error;
    }
    if (plan) {
      const created = await writeSubmission(deps, options, plan, new Date(), known.version);
      if (created) return [created];
    }
  }

  const template = await readTemplateForCreate(db, {
    id: options.templateId,
    accountId: options.accountId,
    folders: options.folders ?? null,
  });
  checkSettings(options.settings);

  // Validate and plan everything before writing anything.
  const plans: SubmissionPlan[] = [];
  for (const request of options.submissions) plans.push(await planRequest(deps, options, request, template));

  const now = new Date();
  // Removed since it was read (it can only be, outright, with no submission of its own).
  const gone = () => new AppError('NOT_FOUND', `Template ${options.templateId} not found`);
  if (plans.length === 1) return [(await writeSubmission(deps, options, plans[0]!, now)) ?? throwError(gone())];
  // Several submissions: one transaction, which also stores the staged files (their rows roll back with it).
  const planned: PlannedSubmissions = {
    plans,
    ids: await Promise.all(plans.map((plan) => allocateIds(db, plan.parties.length))),
  };
  const { created, effects } = await db.$transaction((tx) => insertPlannedSubmissions(tx, deps, options, planned, now));
  await deps.effects.committed(effects);
  return created;
}

/**
 * The template submissions are made from, checked as a create request checks it: one read for the
 * tenant check and the copy (findTemplateForAccount's rule: 404, then 403; for an API key limited to
 * folders, a template outside them is 403 too), then archived and without fields. Its roles and
 * fields are shared with later reads: copy before changing.
 * @param options.folders the caller's key's folders (null: every folder; src/accounts/key-scopes.ts)
 * @throws AppError NOT_FOUND "Template <id> not found", FORBIDDEN (outsideFoldersError for a folder),
 *   VALIDATION "Template has been archived", VALIDATION noFieldsError (src/templates/template-warnings.ts)
 */
export async function readTemplateForCreate(
  db: Db,
  options: { id: number; accountId: number; folders?: KeyFolders | null },
): Promise<{ id: number; version: string; roles: Role[]; fields: Field[] }> {
  const template = await readTemplate(db, options.id);
  if (!template) throw new AppError('NOT_FOUND', `Template ${options.id} not found`);
  if (template.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  if (!inKeyFolders(template.folderId, options.folders ?? null)) throw outsideFoldersError();
  if (template.archived) throw new AppError('VALIDATION', 'Template has been archived');
  if (template.fields.length === 0) {
    // The name only for the message: the usual path does not read it.
    const { name } = await db.template.findUniqueOrThrow({ where: { id: template.id }, select: { name: true } });
    throw noFieldsError({ id: template.id, name });
  }
  return template;
}

/** Submissions planned and their ids drawn, not yet written (planSubmissions). */
export interface PlannedSubmissions {
  plans: SubmissionPlan[];
  ids: SubmissionIds[];
}

/**
 * Checks and plans the submissions of a request on roles and fields held in memory, not read
 * from a stored template: those of a one-off template written in the same transaction
 * (src/submissions/create-one-off-submission.ts). The same checks and plan as createSubmissions
 * (§7.1–7.5); attachment values are loaded now, stored by insertPlannedSubmissions.
 * @param template the roles and fields the submissions are made from (at least one field)
 * @throws AppError VALIDATION with DocuSeal's messages (§7.1)
 */
export async function planSubmissions(
  deps: CreateDeps,
  options: Omit<CreateSubmissionsOptions, 'templateId'>,
  template: { roles: Role[]; fields: Field[] },
): Promise<PlannedSubmissions> {
  checkSettings(options.settings);
  const plans: SubmissionPlan[] = [];
  for (const request of options.submissions)
    plans.push(await planRequest(deps, { ...options, templateId: 0 }, request, template));
  return { plans, ids: await Promise.all(plans.map((plan) => allocateIds(deps.db, plan.parties.length))) };
}

/**
 * Writes planned submissions inside the caller's transaction `tx`, each with what it causes in
 * the outbox (INSERT_SUBMISSION), storing their staged files. The caller hands `effects` to
 * SideEffects.committed once the transaction has committed.
 * @param options.templateId the template they are made from (its documents are copied now: it
 *   may be one written earlier in `tx`)
 * @returns what was created, in plan order, and the effects written
 * @throws AppError NOT_FOUND when the template is not there (nothing is written: the caller's
 *   transaction rolls back)
 */
export async function insertPlannedSubmissions(
  tx: Prisma.TransactionClient,
  deps: Pick<CreateDeps, 'storage'>,
  options: CreateSubmissionsOptions,
  planned: PlannedSubmissions,
  now: Date,
): Promise<{ created: CreatedSubmission[]; effects: Effects }> {
  const effects = noEffects();
  const rows: string[] = [];
  for (const [i, plan] of planned.plans.entries()) {
    const values: Record<string, unknown>[] = [];
    for (const party of plan.parties)
      values.push(await storeStagedFiles(tx, deps.storage, options.accountId, plan.staged, party.values));
    const row = submissionRow(options, plan, values, now, planned.ids[i]!);
    rows.push(row.json);
    effects.jobs.push(...row.effects.jobs);
    effects.events.push(...row.effects.events);
  }
  // All of them in one statement (a bulk send's batch writes a hundred).
  const inserted = await insertSubmissionIn(tx, rows.length === 1 ? rows[0]! : `[${rows.join(',')}]`);
  const created = planned.plans.map((plan, i) => {
    const own = inserted.filter((r) => Number(r.submission_id) === planned.ids[i]!.submissionId);
    if (own.length === 0) throw new AppError('NOT_FOUND', `Template ${options.templateId} not found`);
    return createdFrom(plan, own);
  });
  return { created, effects };
}

function throwError(error: Error): never {
  throw error;
}

/** Thrown inside writeSubmission's transaction to undo it when the template changed. */
const TEMPLATE_CHANGED = Symbol('template changed');

/**
 * Writes one planned submission: with no attachment to store, one statement (atomic by itself);
 * otherwise a transaction that also stores the staged files (their rows roll back with it).
 * @param templateVersion write only if the template is still that version, the caller's and
 *   not archived (planned on the template as last read)
 * @returns what was created, or undefined when `templateVersion` no longer holds (nothing written)
 */
async function writeSubmission(
  deps: CreateDeps,
  options: CreateSubmissionsOptions,
  plan: SubmissionPlan,
  now: Date,
  templateVersion?: string,
): Promise<CreatedSubmission | undefined> {
  const { db } = deps;
  const ids = await allocateIds(db, plan.parties.length);
  if (plan.staged.length === 0) {
    const row = submissionRow(
      options,
      plan,
      plan.parties.map((p) => p.values),
      now,
      ids,
      templateVersion,
    );
    const rows = await insertSubmission(db, row.json);
    if (rows.length === 0) return undefined;
    await deps.effects.committed(row.effects);
    return createdFrom(plan, rows);
  }
  try {
    let effects: Effects = noEffects();
    const created = await db.$transaction(async (tx) => {
      const values: Record<string, unknown>[] = [];
      for (const party of plan.parties)
        values.push(await storeStagedFiles(tx, deps.storage, options.accountId, plan.staged, party.values));
      const row = submissionRow(options, plan, values, now, ids, templateVersion);
      const rows = await insertSubmissionIn(tx, row.json);
      if (rows.length === 0) throw TEMPLATE_CHANGED;
      effects = row.effects;
      return createdFrom(plan, rows);
    });
    await deps.effects.committed(effects);
    return created;
  } catch (error) {
    if (error === TEMPLATE_CHANGED) return undefined;
    throw error;
  }
}

/** Ids drawn for one submission before it is written: its own and its parties', in party order. */

/** Draws the ids of one submission with `parties` submitters. */
function allocateIds(db: Db, parties: number): Promise<SubmissionIds> {
  return drawSubmissionIds(db, parties);
}

/**
 * What a planned submission causes (see the module comment): the requests of who is sent now,
 * its expiry, the documents of parties created completed, and submission.created.
 */
function creationEffects(
  accountId: number,
  ids: SubmissionIds,
  parties: { sendNow: boolean; completed: boolean; preferences: unknown; email: string | null; phone: string | null }[],
  expireAt: Date | null | undefined,
  now: Date,
  requestsDueAt?: () => Date,
): Effects {
  const submissionId = ids.submissionId;
  const requests = requestJobs(
    parties.flatMap((p, i) =>
      p.sendNow ? [{ id: ids.submitterIds[i]!, preferences: p.preferences, email: p.email, phone: p.phone }] : [],
    ),
  );
  return {
    jobs: [
      ...(requestsDueAt ? requests.map((job) => ({ ...job, at: requestsDueAt() })) : requests),
      ...expiryJobs(submissionId, expireAt),
      ...parties.flatMap((p, i) => (p.completed ? [completionJob(submissionId, ids.submitterIds[i]!)] : [])),
    ],
    events: [
      {
        type: 'submission.created',
        accountId,
        recordId: submissionId,
        at: now,
        key: `submission.created:${submissionId}`,
      },
    ],
  };
}

/** The request-wide settings' checks (§7.1). @throws AppError VALIDATION */
export function checkSettings(settings: SubmissionSettings): void {
  if (settings.replyTo && !isValidEmailList(settings.replyTo))
    throw new AppError('VALIDATION', 'reply_to email is invalid');
  if (settings.bccCompleted && !isValidEmailList(settings.bccCompleted))
    throw new AppError('VALIDATION', 'bcc_completed email is invalid');
  if (settings.message?.subject && !settings.message.body)
    throw new AppError('VALIDATION', 'body is required in `message`.');
}

/** One submission's checks (§7.1) and plan. @throws AppError VALIDATION */
async function planRequest(
  deps: { db: Db; storage: FileStorage },
  options: CreateSubmissionsOptions,
  request: SubmissionRequest,
  template: { roles: Role[]; fields: Field[] },
) {
  if (request.submitters.length === 0) throw new AppError('VALIDATION', 'submitters is required');
  checkUniqueRoles(request.submitters, request.path);
  request.submitters.forEach((s, i) => {
    checkSubmitterContact(s, `${request.path}[${i}]`);
  });
  return planSubmission(deps, options, request, template.roles, template.fields);
}

type SubmissionPlan = Awaited<ReturnType<typeof planSubmission>>;

/**
 * The JSON parameter of INSERT_SUBMISSION for one planned submission (`json`), with the effects
 * it writes into the outbox; `values` per party, files stored; `ids` drawn by allocateIds;
 * `templateVersion`: write only if the template is still that version (see the statement).
 */
function submissionRow(
  options: CreateSubmissionsOptions,
  plan: SubmissionPlan,
  values: Record<string, unknown>[],
  now: Date,
  ids: SubmissionIds,
  templateVersion?: string,
): { json: string; effects: Effects } {
  const settings = options.settings;
  const parties = plan.parties.map((party, i) => ({
    id: ids.submitterIds[i]!,
    roleUuid: party.role.uuid,
    slug: party.slug,
    email: party.input.email?.trim().toLowerCase() ?? null,
    name: party.input.name ?? null,
    phone: party.phone,
    externalId: party.input.external_id ?? null,
    metadata: party.input.metadata ?? {},
    language: party.input.language === undefined ? null : storedLanguage(party.input.language),
    values: values[i],
    preferences: party.preferences,
    orderIndex: party.group,
    sendNow: party.sendNow,
    completed: party.input.completed === true,
  }));
  const effects = creationEffects(options.accountId, ids, parties, settings.expireAt, now, options.requestsDueAt);
  const row = {
    id: ids.submissionId,
    accountId: options.accountId,
    templateId: options.templateId,
    templateVersion: templateVersion ?? null,
    userId: options.userId,
    slug: generateSubmissionSlug(),
    name: settings.name ?? null,
    source: options.source,
    order: plan.order,
    roles: plan.roles,
    fields: plan.fields,
    preferences: {
      // The request's send_email, as DocuSeal keeps it: the completed email to the owner follows it
      // (src/signing/completed-emails.ts).
      send_email: settings.sendEmail,
      ...(settings.bccCompleted ? { bcc_completed: settings.bccCompleted } : {}),
      ...(settings.message ? { message: settings.message } : {}),
      // Read when each reminder comes due (src/submissions/reminders.ts).
      ...(settings.reminders ? { reminders: settings.reminders } : {}),
    },
    variables: settings.variables ?? {},
    language: settings.language ?? null,
    expireAt: settings.expireAt?.toISOString() ?? null,
    completedAt: plan.parties.every((p) => p.input.completed) ? now.toISOString() : null,
    now: now.toISOString(),
    parties,
    outbox: outboxRows(effectJobs(effects), now),
  };
  return { json: JSON.stringify(row), effects };
}

/** What createSubmissions returns for a plan, from its INSERT_SUBMISSION rows (matched by slug). */
function createdFrom(plan: SubmissionPlan, rows: InsertedRow[]): CreatedSubmission {
  const submitters: CreatedSubmitter[] = rows.map((r) => ({
    id: Number(r.id),
    submissionId: Number(r.submission_id),
    uuid: r.uuid,
    slug: r.slug,
    email: r.email,
    name: r.name,
    phone: r.phone,
    externalId: r.external_id,
    roleUuid: r.role_uuid,
    metadata: JSON.parse(r.metadata) as unknown,
    preferences: JSON.parse(r.preferences) as unknown,
    language: r.language,
    values: JSON.parse(r.values) as Record<string, unknown>,
    sentAt: r.sent_at,
    completedAt: r.completed_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
  const bySlug = new Map(submitters.map((s) => [s.slug, s]));
  const stored = (party: PartyPlan) => {
    const row = bySlug.get(party.slug);
    if (!row) throw new Error(`createSubmissions: no row came back for a party`);
    return row;
  };
  return {
    id: Number(rows[0]!.submission_id),
    submitterIds: plan.parties.map((p) => stored(p).id),
    expireAt: rows[0]!.expire_at,
    createdAt: rows[0]!.submission_created_at,
    roles: plan.roles,
    fields: plan.fields,
    submitters: submitters.sort((a, b) => a.id - b.id),
  };
}

interface PartyPlan {
  input: SubmitterInput;
  /** The submitter's slug, chosen now (the capability in its signing link). */
  slug: string;
  role: Role;
  phone: string | null;
  values: Record<string, unknown>;
  preferences: Record<string, unknown>;
  group: number;
  sendNow: boolean;
}

async function planSubmission(
  deps: { db: Db; storage: FileStorage },
  options: CreateSubmissionsOptions,
  request: SubmissionRequest,
  templateRoles: Role[],
  templateFields: Field[],
): Promise<{ roles: Role[]; fields: Field[]; parties: PartyPlan[]; order: SubmittersOrder; staged: StagedFile[] }> {
  const settings = options.settings;
  const staged: StagedFile[] = [];
  // `roles`: one person for several roles (merge-roles.ts); one name is the same as `role`.
  let roles = templateRoles;
  let roleFields = templateFields;
  const inputs = request.submitters.map((input) => {
    if (!input.roles || input.roles.length === 0) return input;
    if (input.roles.length === 1) return { ...input, role: input.roles[0], uuid: undefined };
    const merged = mergeRoles(roles, roleFields, input.roles, input.role);
    roles = merged.roles;
    roleFields = merged.fields;
    return { ...input, uuid: merged.role.uuid, role: undefined };
  });
  // §7.2: uuid, then role name (case-insensitive), then position.
  const used = new Set<string>();
  const mapped: { input: SubmitterInput; role: Role; path: string }[] = [];
  inputs.forEach((input, i) => {
    const role =
      (input.uuid ? roles.find((r) => r.uuid === input.uuid) : undefined) ??
      (input.role ? roles.find((r) => r.name.toLowerCase() === input.role!.trim().toLowerCase()) : undefined) ??
      roles[input.index ?? i];
    if (!role) return; // beyond the template's roles: dropped, as DocuSeal does
    if (used.has(role.uuid)) throw new AppError('VALIDATION', 'Defined more signing parties than in template');
    used.add(role.uuid);
    mapped.push({ input, role, path: `${request.path}[${i}]` });
  });
  if (mapped.length === 0) throw new AppError('VALIDATION', 'submitters is required');

  // The submission's copy of the fields; a party's own are copied before its prefill changes
  // them (the template's parsed fields are shared: see readTemplate).
  const fields: Field[] = [...roleFields];
  const parties: PartyPlan[] = [];
  for (const { input, role, path } of mapped) {
    const changes = input.values !== undefined || input.fields !== undefined || input.readonly_fields !== undefined;
    const own: Field[] = [];
    fields.forEach((field, i) => {
      if (field.submitter_uuid !== role.uuid) return;
      if (changes) fields[i] = structuredClone(field);
      own.push(fields[i]!);
    });
    const { values, phone } = await applyPrefill(
      { download: options.download, images: options.images, accountId: options.accountId, staged },
      own,
      input,
      path,
    );
    const sendEmail = input.send_email ?? settings.sendEmail;
    const sendSms = input.send_sms ?? settings.sendSms;
    const replyTo = input.reply_to ?? settings.replyTo;
    if (input.reply_to && !isValidEmailList(input.reply_to))
      throw new AppError('VALIDATION', `reply_to email is invalid in \`${path}\`.`);
    if (input.message?.subject && !input.message.body)
      throw new AppError('VALIDATION', `body is required in \`${path}.message\`.`);
    parties.push({
      input,
      slug: generateSubmissionSlug(),
      role,
      phone,
      values,
      preferences: {
        send_email: sendEmail,
        send_sms: sendSms,
        ...(replyTo ? { reply_to: replyTo } : {}),
        ...((input.completed_redirect_url ?? settings.completedRedirectUrl)
          ? { completed_redirect_url: input.completed_redirect_url ?? settings.completedRedirectUrl }
          : {}),
        ...((input.message ?? settings.message) ? { message: input.message ?? settings.message } : {}),
        // DocuSeal: the request's preferences merged with the submitter's (create_from_submitters.rb).
        ...optionalPreference('go_to_last', input.go_to_last ?? settings.goToLast),
        ...optionalPreference('require_email_2fa', input.require_email_2fa ?? settings.requireEmail2fa),
        ...optionalPreference('require_phone_2fa', input.require_phone_2fa ?? settings.requirePhone2fa),
      },
      group: 0,
      sendNow: false,
    });
  }

  // A party created completed keeps no value of a field whose conditions are not met (DocuSeal's
  // maybe_remove_condition_values), judged over every party's values, its own on top.
  for (const party of parties) {
    if (!party.input.completed) continue;
    const others: Record<string, unknown> = {};
    for (const other of parties) if (other !== party) Object.assign(others, other.values);
    party.values = dropHiddenValues(fields, party.role.uuid, party.values, others);
  }
  // `{{date}}` becomes the completion date in the account's time zone (DocuSeal's
  // replace_current_date_placeholders in create_from_submitters.rb).
  if (parties.some((party) => party.input.completed && Object.values(party.values).includes(TODAY_PLACEHOLDER))) {
    const { timezone } = await deps.db.account.findUniqueOrThrow({
      where: { id: options.accountId },
      select: { timezone: true },
    });
    const now = new Date();
    for (const party of parties)
      if (party.input.completed) party.values = replaceTodayPlaceholders(fields, party.values, timezone, now);
  }

  // §7.3: groups by per-submitter `order`, else by position (preserved) or all together (random).
  const grouped = parties.some((p) => p.input.order !== undefined);
  const order: SubmittersOrder = grouped ? 'preserved' : settings.order;
  parties.forEach((party, i) => {
    party.group = grouped ? (party.input.order ?? i) : order === 'random' ? 0 : i;
  });
  const pendingGroups = parties.filter((p) => !p.input.completed).map((p) => p.group);
  const firstPending = pendingGroups.length > 0 ? Math.min(...pendingGroups) : undefined;
  for (const party of parties) {
    const reachable =
      (party.preferences.send_email === true && Boolean(party.input.email)) ||
      (party.preferences.send_sms === true && Boolean(party.phone));
    // A submission started from a template's shared link (/d/{slug}) sends no request: its signer is
    // on the form already (DocuSeal's StartFormController redirects to it and enqueues no email).
    party.sendNow = !party.input.completed && reachable && party.group === firstPending && options.source !== 'link';
  }

  return { roles: mapped.map((m) => m.role), fields, parties, order, staged };
}

/**
 * Prefill of one party (§7.5); attachment files are loaded into `context.staged` (stored by the
 * caller's transaction with storeStagedFiles): `values` keyed by field uuid, name, downcased or parameterized name
 * (unknown keys ignored; a name shared by several fields fills them all), `fields[]` overrides and
 * default values (an unknown field with a value is an error only without `values`), and
 * `readonly_fields`. The first phone value becomes the party's phone. Mutates `own` (the
 * submission's copy of the party's fields): non-attachment values become their default_value.
 * Sizes (src/limits.ts): each value as a signer's (valueSizeMessage), all values
 * together as stored (checkValuesSize); a `validation_pattern` must run on RE2 (field-pattern.ts).
 * @returns the stored values (by field uuid) and the phone
 * @throws AppError VALIDATION naming the value ("submitters[0].values.Comment is too long …")
 */
export async function applyPrefill(
  context: Pick<CreateSubmissionsOptions, 'download' | 'images' | 'accountId'> & { staged: StagedFile[] },
  own: Field[],
  input: Pick<SubmitterInput, 'values' | 'fields' | 'readonly_fields' | 'phone'>,
  path: string,
  existing: Record<string, unknown> = {},
): Promise<{ values: Record<string, unknown>; phone: string | null }> {
  const values: Record<string, unknown> = { ...existing };
  let phone = input.phone ? input.phone.replace(/[^\d+]/g, '') : null;

  // `at`: the value's path for size messages ("submitters[0].values.Comment").
  const prefill = async (field: Field, raw: unknown, where: string, at: string) => {
    if (raw === undefined || raw === null) return;
    if (ATTACHMENT_FIELD_TYPES.has(field.type)) {
      values[field.uuid] = await attachmentValue(context.staged, context, raw, field, where);
      return;
    }
    const value = normalizeValue(field, raw, at);
    if (value === null) {
      values[field.uuid] = null; // a blank date or number: DocuSeal's `return nil if value.blank?`
      return;
    }
    const tooLarge = valueSizeMessage(value, at);
    if (tooLarge) throw new AppError('VALIDATION', tooLarge, { details: { path: at } });
    if (field.type === 'phone' && phone === null && typeof value === 'string') {
      phone = value.replace(/[^\d+]/g, '');
      return;
    }
    values[field.uuid] = value;
    field.default_value = value as Field['default_value'];
  };

  for (const [key, raw] of Object.entries(input.values ?? {})) {
    for (const field of own.filter((f) => matchesField(f, key)))
      await prefill(field, raw, `values.${key} in \`${path}\``, `${path}.values.${key}`);
  }
  for (const [i, config] of (input.fields ?? []).entries()) {
    const matches = own.filter((f) => matchesField(f, config.uuid ?? config.name ?? ''));
    const raw = config.default_value ?? config.value;
    if (matches.length === 0) {
      if (raw !== undefined && !input.values)
        throw new AppError('VALIDATION', `Unknown field: ${config.name ?? config.uuid}`);
      continue;
    }
    const at = `${path}.fields[${i}]`;
    if (config.validation_pattern !== undefined)
      checkFieldPattern(config.validation_pattern, `${at}.validation_pattern`);
    else checkFieldPattern(config.validation?.pattern, `${at}.validation.pattern`);
    for (const field of matches) {
      applyFieldConfig(field, config);
      await prefill(
        field,
        raw,
        `fields[${i}] in \`${path}\``,
        `${at}.${config.default_value !== undefined ? 'default_value' : 'value'}`,
      );
    }
  }
  for (const name of input.readonly_fields ?? [])
    for (const field of own.filter((f) => matchesField(f, name))) field.readonly = true;
  // All of the party's values together, as they will be stored (files as placeholders, then uuids).
  checkValuesSize(values, `${path}.values`);
  return { values, phone };
}

/** `{[key]: value}` when the value is given, else nothing (a preference DocuSeal stores only when sent). */
function optionalPreference(key: string, value: boolean | undefined): Record<string, boolean> {
  return value === undefined ? {} : { [key]: value };
}

/** Field overrides of `fields[]` (§7.5). */
function applyFieldConfig(field: Field, config: FieldConfig): void {
  if (config.readonly !== undefined) field.readonly = config.readonly;
  if (config.required !== undefined) field.required = config.required;
  if (config.title !== undefined) field.title = config.title;
  if (config.description !== undefined) field.description = config.description;
  if (config.validation_pattern !== undefined || config.validation) {
    field.validation = {
      ...(field.validation ?? {}),
      ...(config.validation ?? {}),
      ...(config.validation_pattern !== undefined ? { pattern: config.validation_pattern } : {}),
      ...(config.invalid_message !== undefined ? { message: config.invalid_message } : {}),
    };
  }
  if (config.preferences) field.preferences = { ...field.preferences, ...config.preferences };
}

/**
 * Prefilled values by field type (§11, DocuSeal's normalize_values.rb `normalize_value`): dates
 * and numbers read with the field's `preferences.format` and stored as DocuSeal stores them
 * (src/signing/format-values.ts parseFieldValue; blank → null), booleans, option lists; others
 * as strings.
 * @throws AppError VALIDATION `Invalid date value for <name>: "<value>" — expected a date in
 *   DD/MM/YYYY or YYYY-MM-DD` (likewise `Invalid number value for <name>: …`)
 */
export function normalizeValue(field: Field, raw: unknown, path?: string): unknown {
  switch (field.type) {
    case 'number':
    case 'date':
      try {
        return parseFieldValue(field, raw);
      } catch (error) {
        if (!(error instanceof UnparsableValue)) throw error;
        const shown = typeof raw === 'string' ? `"${Array.from(raw).slice(0, 40).join('')}"` : JSON.stringify(raw);
        const name = field.name || field.title || field.uuid;
        throw new AppError('VALIDATION', `Invalid ${field.type} value for ${name}: ${shown} — ${error.message}`, {
          cause: error,
          details: path ? { path } : undefined,
        });
      }
    case 'checkbox':
      return raw === true || /^(1|true|yes)$/i.test(String(raw));
    case 'multiple':
      return Array.isArray(raw)
        ? raw.map(String)
        : String(raw)
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
    default:
      return typeof raw === 'string' ? raw : String(raw);
  }
}

/** A file loaded for an attachment value, stored when the writing transaction runs. */
export interface StagedFile {
  token: string;
  bytes: Buffer;
  filename: string;
  contentType: string;
  /** The stored file's metadata: `typed_text` for a typed signature (src/documents/typed-signature.ts). */
  metadata?: { typed_text: string; type: string };
}

/** Placeholder values stand for staged files until the transaction stores them. */
const STAGED_PREFIX = 'staged-file:';

/** Types whose value the completion draws as an image (src/signing/draw-values.ts): checked as images here. */
const DRAWN_IMAGE_TYPES = new Set(['signature', 'initials', 'image', 'stamp']);

/**
 * A signature/image/… value given as base64, a data URL or an http(s) URL: loaded now (errors are
 * 422s before anything is written), stored later by storeStagedFiles inside the transaction.
 * Short text for a signature or initials (under 60 characters, not a URL: DocuSeal's
 * normalize_values.rb `find_or_create_blob_from_text`) is a typed signature: rendered to a PNG in
 * the signing page's script font (renderTypedSignature) and stored as `signature.png` /
 * `initials.png` with the text in `metadata.typed_text`. The same text for the same type is
 * rendered and stored once per request (both fields then name one file, as DocuSeal reuses the
 * blob), and at most MAX_ITEMS.typedSignatures different ones are rendered per request. A value
 * the completion draws must be an image within IMAGE_MAX_MB and IMAGE_MAX_MEGAPIXELS; it is kept
 * as it will be drawn (readDrawableImage: JPEG as sent, anything else as PNG). `file` values are
 * any file.
 * @throws AppError VALIDATION "<where> is not an image (PNG or JPEG)." and the other reasons of
 *   readDrawableImage ("… is 9000 × 9000 pixels, over 25 megapixels (IMAGE_MAX_MEGAPIXELS)."),
 *   "Invalid signature value" for text with nothing visible, "<where>: too many typed signatures in
 *   one request (maximum is 100)."
 */
async function attachmentValue(
  staged: StagedFile[],
  options: Pick<CreateSubmissionsOptions, 'download' | 'images' | 'accountId'>,
  raw: unknown,
  field: Field,
  where: string,
): Promise<string | string[]> {
  if (field.type === 'file' && Array.isArray(raw)) {
    const tokens: string[] = [];
    for (const item of raw) tokens.push((await attachmentValue(staged, options, item, field, where)) as string);
    return tokens;
  }
  if (typeof raw !== 'string' || raw === '') throw new AppError('VALIDATION', `Invalid ${field.type} value`);
  if (
    (field.type === 'signature' || field.type === 'initials') &&
    isTypedSignatureLength(raw) &&
    !/^https?:\/\//i.test(raw) &&
    !raw.startsWith('data:')
  ) {
    return typedSignatureValue(staged, raw, field, where);
  }
  const loaded = await loadFileInput(raw, { field: where, ...options.download });
  let file = {
    bytes: loaded.bytes,
    filename: loaded.filename ?? `${field.type}-${randomUUID()}`,
    contentType: loaded.contentType ?? 'application/octet-stream',
  };
  if (DRAWN_IMAGE_TYPES.has(field.type)) {
    const image = await readDrawableImage(loaded.bytes, options.images, { owner: options.accountId }).catch(
      (error: unknown) => {
        if (error instanceof UnreadableImageError)
          throw new AppError('VALIDATION', `${where} ${error.message}.`, {
            details: { field: field.name, reason: error.reason },
          });
        throw error;
      },
    );
    file = {
      bytes: Buffer.from(image.bytes),
      filename: `${file.filename.replace(/\.(png|jpe?g)$/i, '')}.${image.kind === 'png' ? 'png' : 'jpg'}`,
      contentType: `image/${image.kind}`,
    };
  }
  const token = `${STAGED_PREFIX}${staged.length}:${randomUUID()}`;
  staged.push({ token, ...file });
  return token;
}

/**
 * A typed signature's staged PNG (see attachmentValue): the token of the same text's file when
 * this request rendered it already for the same field type, else a new one.
 * @throws AppError VALIDATION "Invalid signature value" (nothing visible), "<where>: too many typed
 *   signatures in one request (maximum is 100)."
 */
async function typedSignatureValue(staged: StagedFile[], raw: string, field: Field, where: string): Promise<string> {
  const text = typedSignatureText(raw);
  if (text === '') throw new AppError('VALIDATION', `Invalid ${field.type} value`);
  const same = staged.find((f) => f.metadata?.typed_text === text && f.metadata.type === field.type);
  if (same) return same.token;
  if (staged.filter((f) => f.metadata).length >= MAX_ITEMS.typedSignatures)
    throw new AppError(
      'VALIDATION',
      `${where}: too many typed signatures in one request (maximum is ${MAX_ITEMS.typedSignatures}).`,
    );
  const image = await renderTypedSignature(text);
  const token = `${STAGED_PREFIX}${staged.length}:${randomUUID()}`;
  staged.push({
    token,
    bytes: Buffer.from(image.png),
    filename: `${field.type}.png`,
    contentType: 'image/png',
    metadata: { typed_text: image.text, type: field.type },
  });
  return token;
}

/**
 * Stores staged files as StoredFile rows in the caller's transaction and puts their uuids in
 * place of the placeholders in `values` (by field uuid; single values or lists).
 */
export async function storeStagedFiles(
  tx: Prisma.TransactionClient,
  storage: FileStorage,
  accountId: number,
  staged: StagedFile[],
  values: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (staged.length === 0) return values;
  const uuids = new Map<string, string>();
  for (const file of staged) {
    if (!JSON.stringify(values).includes(file.token)) continue;
    const stored = await storeFile(
      { db: tx, storage },
      {
        accountId,
        bytes: file.bytes,
        filename: file.filename,
        contentType: file.contentType,
        ...(file.metadata ? { metadata: file.metadata } : {}),
      },
    );
    uuids.set(file.token, stored.uuid);
  }
  const swap = (v: unknown) => (typeof v === 'string' && uuids.has(v) ? uuids.get(v)! : v);
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Array.isArray(v) ? v.map(swap) : swap(v)]));
}
