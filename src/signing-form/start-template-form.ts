/**
 * A template's shared link (`/d/{template slug}`, DocuSeal's StartFormController): anyone who has
 * the link of a template whose `shared_link` is true gives an email (the embedded form's
 * `data-email`, or the page's email step) and signs. The signer's submission is created here, with
 * no API key, through the create service every other create uses
 * (src/submissions/create-submissions-request.ts, `source: "link"`), so it is validated, stored and
 * followed by its side effects (`submission.created`, webhooks, expiry: the outbox) exactly as one
 * made over the API; as in DocuSeal, no signature request is sent (the signer is on the form).
 *
 * DocuSeal's rules kept (app/controllers/start_form_controller.rb):
 * - the link works only while the template is shared (`shared_link`), not archived, and its
 *   account not archived: otherwise 404, as DocuSeal's "Not found";
 * - a template with several roles cannot be started without saying which (DocuSeal refuses; the
 *   embedded form's `data-role` names one here);
 * - the same person coming back finds their submission instead of starting another: the latest
 *   submitter of a link submission of this template with the same email (lower case), role and
 *   external id, from the same client address, not declined, its submission neither archived nor
 *   expired (DocuSeal's `find_or_initialize_by` with `ip: [nil, remote_ip]`, `declined_at: nil`,
 *   `non_expired.active`); a completed one is returned too (its form shows the signed copies).
 *
 * Because it is open to anyone, it is bounded beyond the create's own limits:
 * - new submissions per client address and per template per hour (TEMPLATE_LINK_STARTS_PER_IP,
 *   TEMPLATE_LINK_STARTS_PER_TEMPLATE; counted atomically in PostgreSQL,
 *   src/db/queries/template-link-starts.ts), over them 429 "Too many attempts." (DocuSeal's words
 *   for its own rate limit); a returning signer is not counted;
 * - the input is the few keys below, each bounded (src/limits.ts through SubmitterInput's shapes);
 * - values of file fields (signature, initials, image, stamp, file) are refused: over the API they
 *   may be URLs that the service downloads, which an anonymous caller must not make it do.
 */
import { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { Config } from '../config.ts';
import { countTemplateLinkStart } from '../db/queries/template-link-starts.ts';
import { AppError } from '../errors.ts';
import { ATTACHMENT_FIELD_TYPES } from '../field-types.ts';
import {
  type CreateSubmissionsForRequestDeps,
  createSubmissionsForRequest,
} from '../submissions/create-submissions-request.ts';
import { isValidEmailList, SubmitterInput } from '../submissions/submitter-input.ts';
import { matchesField } from '../templates/field-keys.ts';
import { parseFields, parseRoles, type Role } from '../templates/fields.ts';

/**
 * What a template link's start takes (GraphQL `StartTemplateFormInput`): the embedded form's
 * attributes that describe the signer, in DocuSeal's keys. Each is bounded as the same key of a
 * create request's submitter.
 */
export const StartTemplateFormRequest = z.object({
  email: SubmitterInput.shape.email.meta({ description: 'The signer’s email: required (one address).' }),
  name: SubmitterInput.shape.name,
  role: SubmitterInput.shape.role.meta({
    description: 'The template role the signer fills (case-insensitive); required when the template has several.',
  }),
  external_id: SubmitterInput.shape.external_id,
  values: SubmitterInput.shape.values.meta({
    description: 'Prefilled values keyed by field name or uuid; not for file fields (signature, image, file, …).',
  }),
  readonly_fields: SubmitterInput.shape.readonly_fields.meta({
    description: 'Names of fields the signer cannot change.',
  }),
  metadata: SubmitterInput.shape.metadata,
  completed_redirect_url: SubmitterInput.shape.completed_redirect_url,
  send_copy_email: z
    .boolean()
    .optional()
    .meta({ description: 'Email the signer a copy of the signed documents (default true).' }),
});
export type StartTemplateFormRequest = z.infer<typeof StartTemplateFormRequest>;

export interface StartTemplateFormDeps extends CreateSubmissionsForRequestDeps {
  config: CreateSubmissionsForRequestDeps['config'] & Pick<Config, 'appUrl' | 'templateLinkStarts'>;
}

/** Where the signer goes: its own signing form. */
export interface TemplateFormStart {
  /** The submitter's slug: its form is `/s/{slug}`. */
  slug: string;
  /** `{APP_URL}/s/{slug}`. */
  embedSrc: string;
  /** True when this call created the submission; false when the signer's existing one was found. */
  created: boolean;
}

/** DocuSeal's words for its rate limit (config/locales/i18n.yml `too_many_attempts`). */
export const TOO_MANY_ATTEMPTS = 'Too many attempts.';

/**
 * Starts (or finds again) the signer's submission of a shared template (module comment).
 * @param request.slug the template's slug (the `/d/{slug}` of its link)
 * @param request.input the StartTemplateFormRequest, not yet parsed
 * @param request.ip the client's address (the per-address limit and the returning signer's match;
 *   without one, nothing is found again and the limit counts it under "unknown")
 * @throws AppError NOT_FOUND (no such template, not shared, archived, or its account archived),
 *   VALIDATION (input sizes and shapes; "email is required"; "email is invalid"; an unknown role; a
 *   template with several roles and no `role`; a value for a file field; and what the create
 *   refuses, with DocuSeal's messages), RATE_LIMITED "Too many attempts."
 */
export async function startTemplateForm(
  deps: StartTemplateFormDeps,
  request: { slug: string; input: unknown; ip?: string | undefined; userAgent?: string | undefined; now?: Date },
): Promise<TemplateFormStart> {
  const { db } = deps;
  const input = parseInput(StartTemplateFormRequest, request.input);
  const template = SLUG_PATTERN.test(request.slug)
    ? await db.template.findUnique({
        where: { slug: request.slug },
        select: {
          id: true,
          accountId: true,
          authorId: true,
          sharedLink: true,
          archivedAt: true,
          submitters: true,
          account: { select: { archivedAt: true } },
        },
      })
    : null;
  if (!template?.sharedLink || template.archivedAt || template.account.archivedAt)
    throw new AppError('NOT_FOUND', 'Not found');

  const email = input.email?.trim().toLowerCase();
  if (!email) throw new AppError('VALIDATION', 'email is required');
  if (/[,;/]/.test(email) || !isValidEmailList(email) || email.includes('<'))
    throw new AppError('VALIDATION', 'email is invalid');
  const role = roleToStart(parseRoles(template.submitters), input.role);
  // The fields are read only to judge values (a template's fields may be up to 1 MB of JSON).
  if (input.values && Object.keys(input.values).length > 0) {
    const { fields } = await db.template.findUniqueOrThrow({ where: { id: template.id }, select: { fields: true } });
    refuseFileValues(
      parseFields(fields).filter((f) => f.submitter_uuid === role.uuid),
      input.values,
    );
  }

  const now = request.now ?? new Date();
  const returning = request.ip
    ? await db.submitter.findFirst({
        where: {
          email,
          roleUuid: role.uuid,
          externalId: input.external_id ?? null,
          ip: request.ip,
          declinedAt: null,
          submission: {
            templateId: template.id,
            source: 'link',
            archivedAt: null,
            OR: [{ expireAt: null }, { expireAt: { gt: now } }],
          },
        },
        orderBy: { id: 'desc' },
        select: { slug: true },
      })
    : null;
  if (returning) return { slug: returning.slug, embedSrc: signingLink(deps, returning.slug), created: false };

  const ipKey = `ip:${request.ip ?? 'unknown'}`;
  const templateKey = `template:${template.id}`;
  const counts = await countTemplateLinkStart(db, [ipKey, templateKey], now);
  const limits = deps.config.templateLinkStarts;
  if ((counts.get(ipKey) ?? 0) > limits.perIp || (counts.get(templateKey) ?? 0) > limits.perTemplate)
    throw new AppError('RATE_LIMITED', TOO_MANY_ATTEMPTS);

  const [submission] = await createSubmissionsForRequest(
    deps,
    { accountId: template.accountId, userId: template.authorId ?? (await anyUserOf(deps, template.accountId)) },
    {
      template_id: template.id,
      submitters: [
        {
          role: role.name,
          email,
          name: input.name,
          external_id: input.external_id,
          values: input.values,
          readonly_fields: input.readonly_fields,
          metadata: input.metadata,
          completed_redirect_url: input.completed_redirect_url,
          send_email: input.send_copy_email ?? true,
        },
      ],
    },
    { source: 'link' },
  );
  const submitter = submission!.submitters[0]!;
  // The client it was started from, as DocuSeal records it: a returning signer is matched on it.
  await db.submitter.update({
    where: { id: submitter.id },
    data: { ip: request.ip ?? null, ua: request.userAgent?.slice(0, 1000) ?? null },
    select: { id: true },
  });
  return { slug: submitter.slug, embedSrc: signingLink(deps, submitter.slug), created: true };
}

/** Template slugs as Signet makes them (14 url-safe characters); anything far off is not worth a query. */
const SLUG_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const signingLink = (deps: StartTemplateFormDeps, slug: string) => `${deps.config.appUrl}/s/${slug}`;

/**
 * The role a link's signer fills: the one named (case-insensitive), else the template's only one.
 * @throws AppError VALIDATION for an unknown role, or several roles and none named
 */
function roleToStart(roles: Role[], name: string | undefined): Role {
  if (name?.trim()) {
    const wanted = name.trim().toLowerCase();
    const role = roles.find((r) => r.name.toLowerCase() === wanted);
    if (!role) throw new AppError('VALIDATION', `role ${name.trim()} is not a role of the template`);
    return role;
  }
  if (roles.length !== 1)
    throw new AppError(
      'VALIDATION',
      'This template has multiple signers, which prevents the use of a sharing link as it is unclear which signer ' +
        'is responsible for specific fields: name the signer’s role (the embedded form’s data-role).',
    );
  return roles[0]!;
}

/**
 * Refuses values for the role's file fields (module comment).
 * @throws AppError VALIDATION naming the value
 */
function refuseFileValues(own: ReturnType<typeof parseFields>, values: Record<string, unknown>): void {
  for (const key of Object.keys(values)) {
    const field = own.find((f) => matchesField(f, key) && ATTACHMENT_FIELD_TYPES.has(f.type));
    if (field)
      throw new AppError(
        'VALIDATION',
        `values.${key}: a ${field.type} field cannot be prefilled through a template link`,
        {
          details: { path: `values.${key}` },
        },
      );
  }
}

/**
 * The user a link submission is created by when its template has no author (the author's user was
 * deleted): the account's earliest active user, else its earliest.
 */
async function anyUserOf(deps: Pick<StartTemplateFormDeps, 'db'>, accountId: number): Promise<number> {
  const user = await deps.db.user.findFirst({
    where: { accountId },
    orderBy: [{ archivedAt: { sort: 'asc', nulls: 'first' } }, { id: 'asc' }],
    select: { id: true },
  });
  if (!user) throw new AppError('NOT_FOUND', 'Not found');
  return user.id;
}
