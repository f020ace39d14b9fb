/**
 * DocuSeal's submission create routes (interface spec "Submissions"; reference §7):
 * POST /submissions, /submissions/init, /templates/{id}/submissions and /submissions/emails, all
 * through the `createSubmissions` mutation. The request's shape is checked here with DocuSeal's
 * messages (§7.1: "submitters must be a Array", "0 must be a Object in `submitters`.", …);
 * the rules about contents are the service's.
 */
import { AppError } from '../../src/errors.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';
import { bodyObject, isTruthy, pathId } from '../params.ts';
import { serializeCreatedSubmitter, SUBMITTER_CREATE_FRAGMENT, type CreatedSubmitterData } from '../serializers/submitter.ts';

type Body = Record<string, unknown>;

function isObject(value: unknown): value is Body {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, key: string, where?: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string') throw new AppError('VALIDATION', where ? `${key} must be a String in \`${where}\`.` : `${key} must be a String`);
  return value;
}

function bool(value: unknown): boolean | undefined {
  return value === undefined || value === null ? undefined : isTruthy(value);
}

function obj(value: unknown, key: string, where?: string): Body | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new AppError('VALIDATION', where ? `${key} must be a Object in \`${where}\`.` : `${key} must be a Object`);
  return value;
}

function message(value: unknown, where?: string) {
  const m = obj(value, 'message', where);
  if (!m || Object.keys(m).length === 0) return undefined;
  const subject = str(m.subject, 'subject', 'message');
  const body = str(m.body, 'body', 'message');
  if (!body) throw new AppError('VALIDATION', where ? `body is required in \`${where}.message\`.` : 'body is required in `message`.');
  return { subject, body };
}

function submitterInput(raw: unknown, index: number, path: string) {
  const where = `${path}[${index}]`;
  if (!isObject(raw)) throw new AppError('VALIDATION', `${index} must be a Object in \`${path}\`.`);
  const fields = raw.fields;
  if (fields !== undefined && fields !== null && !Array.isArray(fields)) throw new AppError('VALIDATION', `fields must be a Array in \`${where}\`.`);
  const order = raw.order;
  if (order !== undefined && order !== null && !Number.isInteger(Number(order))) throw new AppError('VALIDATION', `order must be a Integer in \`${where}\`.`);
  return {
    uuid: str(raw.uuid, 'uuid', where),
    role: str(raw.role, 'role', where),
    email: str(raw.email, 'email', where),
    name: str(raw.name, 'name', where),
    phone: str(raw.phone, 'phone', where),
    values: obj(raw.values, 'values', where),
    externalId: str(raw.external_id ?? raw.application_key, 'external_id', where),
    completed: bool(raw.completed),
    metadata: obj(raw.metadata, 'metadata', where),
    sendEmail: bool(raw.send_email),
    sendSms: bool(raw.send_sms),
    completedRedirectUrl: str(raw.completed_redirect_url, 'completed_redirect_url', where),
    replyTo: str(raw.reply_to, 'reply_to', where),
    message: message(raw.message, where),
    readonlyFields: Array.isArray(raw.readonly_fields) ? raw.readonly_fields.map(String) : undefined,
    order: order === undefined || order === null ? undefined : Number(order),
    fields: (fields as unknown[] | undefined)?.map((f, i) => {
      if (!isObject(f)) throw new AppError('VALIDATION', `${i} must be a Object in \`${where}.fields\`.`);
      const fieldWhere = `${where}.fields[${i}]`;
      return {
        name: str(f.name, 'name', fieldWhere),
        uuid: str(f.uuid, 'uuid', fieldWhere),
        defaultValue: f.default_value ?? f.value,
        readonly: bool(f.readonly),
        required: bool(f.required),
        title: str(f.title, 'title', fieldWhere),
        description: str(f.description, 'description', fieldWhere),
        validationPattern: str(f.validation_pattern, 'validation_pattern', fieldWhere),
        invalidMessage: str(f.invalid_message, 'invalid_message', fieldWhere),
        preferences: obj(f.preferences, 'preferences', fieldWhere),
      };
    }),
  };
}

function submitterList(value: unknown, path: string) {
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) throw new AppError('VALIDATION', 'submitters is required');
  if (!Array.isArray(value)) throw new AppError('VALIDATION', 'submitters must be a Array');
  return value.map((s, i) => submitterInput(s, i, path));
}

function templateIdOf(request: RestRequest, body: Body): number {
  if (request.params.id !== undefined) return pathId(request, 'Template');
  const raw = body.template_id ?? (isObject(body.submission) ? body.submission.template_id : undefined);
  if (raw === undefined || raw === null || raw === '') throw new AppError('VALIDATION', 'Template not found');
  const id = Number(raw);
  if (!Number.isInteger(id) || id <= 0) throw new AppError('NOT_FOUND', `Template ${String(raw)} not found`);
  return id;
}

/** Submitters mode: top-level `submitters`, or the earlier shape `submission: {submitters}` / `submission(s): [{submitters}, ...]`. */
function createVariables(request: RestRequest) {
  const body = bodyObject(request);
  const templateId = templateIdOf(request, body);
  const groups: unknown[] = [];
  if (body.submitters !== undefined) groups.push(body.submitters);
  else if (Array.isArray(body.submission) || Array.isArray(body.submissions)) {
    for (const entry of (body.submission ?? body.submissions) as unknown[]) groups.push(isObject(entry) ? entry.submitters : undefined);
  } else if (isObject(body.submission)) groups.push(body.submission.submitters);
  else if (typeof (body.emails ?? body.email) === 'string') return emailsVariables(request);
  else groups.push(undefined);

  const order = body.order ?? body.submitters_order;
  if (order !== undefined && order !== null && order !== 'preserved' && order !== 'random') {
    throw new AppError('VALIDATION', 'order must be one of preserved, random');
  }
  const [first, ...rest] = groups.map((g, i) => submitterList(g, groups.length > 1 ? `submissions[${i}].submitters` : 'submitters'));
  return {
    input: {
      templateId,
      submitters: first,
      moreSubmissions: rest.length ? rest.map((submitters) => ({ submitters })) : undefined,
      sendEmail: bool(body.send_email),
      sendSms: bool(body.send_sms),
      order: order as string | undefined,
      completedRedirectUrl: str(body.completed_redirect_url, 'completed_redirect_url'),
      bccCompleted: str(body.bcc_completed, 'bcc_completed'),
      replyTo: str(body.reply_to, 'reply_to'),
      message: message(body.message),
      expireAt: expireAt(body.expire_at),
      name: str(body.name, 'name'),
      variables: obj(body.variables, 'variables'),
    },
  };
}

function expireAt(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const raw = String(value).trim();
  // No offset means UTC (§7.5).
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(raw) || /^\d+$/.test(raw) ? raw : `${raw.replace(' ', 'T')}Z`);
  if (Number.isNaN(date.getTime())) throw new AppError('VALIDATION', 'expire_at is invalid');
  return date.toISOString();
}

/** POST /submissions/emails: `emails` (or `email`) comma-separated; one submission per address (§7.6). */
function emailsVariables(request: RestRequest) {
  const body = bodyObject(request);
  const templateId = templateIdOf(request, body);
  const raw = body.emails ?? body.email;
  if (raw === undefined || raw === null || raw === '') throw new AppError('VALIDATION', 'emails or email is required');
  if (typeof raw !== 'string') throw new AppError('VALIDATION', 'emails must be a String');
  const emails = [...new Set(raw.match(/[^\s,;<>"']+@[^\s,;<>"']+/g) ?? [])];
  if (emails.length === 0) throw new AppError('VALIDATION', 'emails are invalid');
  return {
    input: {
      templateId,
      emailsMode: true,
      submitters: emails.map((email) => ({ email })),
      sendEmail: bool(body.send_email),
      message: message(body.message),
    },
  };
}

interface CreateData {
  createSubmissions: {
    submissions: { id: number; expireAt: string | null; createdAt: string }[];
    submitters: CreatedSubmitterData[];
  };
}

const OPERATION = /* GraphQL */ `
  mutation RestCreateSubmissions($input: CreateSubmissionsInput!) {
    createSubmissions(input: $input) {
      submissions { id expireAt createdAt }
      submitters { ...RestCreatedSubmitter }
    }
  }
  ${SUBMITTER_CREATE_FRAGMENT}
`;

const submittersArray = ({ createSubmissions }: CreateData) => createSubmissions.submitters.map(serializeCreatedSubmitter);

export const submissionRoutes: RestRoute[] = [
  { method: 'POST', path: '/submissions', operation: OPERATION, variables: createVariables, serialize: submittersArray },
  { method: 'POST', path: '/templates/:id/submissions', operation: OPERATION, variables: createVariables, serialize: submittersArray },
  { method: 'POST', path: '/submissions/emails', operation: OPERATION, variables: emailsVariables, serialize: submittersArray },
  {
    method: 'POST',
    path: '/submissions/init',
    operation: OPERATION,
    variables: createVariables,
    // One submission → {id, submitters, expire_at, created_at}; several → {submitters} (§5.3).
    serialize: (data: CreateData) => {
      const { submissions } = data.createSubmissions;
      const submitters = submittersArray(data);
      if (submissions.length !== 1) return { submitters };
      const [only] = submissions;
      return { id: only!.id, submitters, expire_at: only!.expireAt, created_at: only!.createdAt };
    },
  },
];
