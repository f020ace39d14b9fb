/**
 * The signer's form over GraphQL (docs/signing-form.md): the `signingForm` query and the
 * open/save/complete/decline mutations. Authenticated by the slug alone (the capability of one
 * signer's form, DESIGN.md "Security model"): no API key is needed, and none is looked at.
 * Resolvers are adapters over src/signing-form/; refusals are AppErrors (VALIDATION → 422,
 * NOT_FOUND → 404), field refusals carry `extensions.fieldUuid`.
 */
import { completeSigningForm } from '../../signing-form/complete-signing-form.ts';
import { declineSigningForm } from '../../signing-form/decline-signing-form.ts';
import type { SigningFormDeps, SignerRequest } from '../../signing-form/form-events.ts';
import {
  consentIn,
  loadSigningForm,
  type SigningFormAttachment,
  type SigningFormDocument,
  type SigningFormField,
  type SigningFormView,
} from '../../signing-form/load-signing-form.ts';
import { recordEmailClick } from '../../signing-form/email-clicks.ts';
import { loadFormEventDetail } from '../../signing-form/form-event-detail.ts';
import { openSigningForm } from '../../signing-form/open-signing-form.ts';
import { saveSigningFormValues } from '../../signing-form/save-signing-form-values.ts';
import { acceptSigningConsent } from '../../signing-form/accept-signing-consent.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';
import { DocumentLinkRef } from './submission-queries.ts';
import { AreaRef, FieldConditionRef, FieldOptionRef } from './template.ts';

const SigningFormStateRef = builder.enumType('SigningFormState', {
  description: 'OPEN: can be filled; otherwise why not (DocuSeal’s message is in SigningForm.message).',
  values: ['OPEN', 'COMPLETED', 'DECLINED', 'ARCHIVED', 'EXPIRED'] as const,
});

const SigningFormSubmitterRef = builder.objectRef<SigningFormView['submitter']>('SigningFormSubmitter').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    name: t.exposeString('name', { nullable: true }),
    email: t.exposeString('email', { nullable: true }),
    phone: t.exposeString('phone', { nullable: true }),
    role: t.exposeString('role'),
    status: t.exposeString('status', { description: 'awaiting, sent, opened, completed or declined.' }),
    openedAt: t.expose('openedAt', { type: 'DateTime', nullable: true }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true }),
    declinedAt: t.expose('declinedAt', { type: 'DateTime', nullable: true }),
  }),
});

const SigningFormSubmissionRef = builder.objectRef<SigningFormView['submission']>('SigningFormSubmission').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name', { nullable: true }),
    templateName: t.exposeString('templateName', {
      description: 'The template’s name: the page’s title and heading when the submission has none.',
    }),
    status: t.exposeString('status', { description: 'pending, completed, declined or expired.' }),
    order: t.exposeString('order', { description: 'preserved or random.' }),
    expireAt: t.expose('expireAt', { type: 'DateTime', nullable: true }),
  }),
});

const SigningFormPageRef = builder.objectRef<{ width: number; height: number }>('SigningFormPage').implement({
  description: 'A page as displayed (after /Rotate), in PDF points.',
  fields: (t) => ({ width: t.exposeFloat('width'), height: t.exposeFloat('height') }),
});

const SigningFormDocumentRef = builder.objectRef<SigningFormDocument>('SigningFormDocument').implement({
  fields: (t) => ({
    uuid: t.exposeString('uuid', { description: 'The attachment uuid areas refer to (FieldArea.attachmentUuid).' }),
    name: t.exposeString('name'),
    url: t.exposeString('url', { description: 'Signed URL of the PDF (/file/...).' }),
    pages: t.field({ type: [SigningFormPageRef], resolve: (d) => d.pages }),
  }),
});

const SigningFormAttachmentRef = builder.objectRef<SigningFormAttachment>('SigningFormAttachment').implement({
  fields: (t) => ({
    uuid: t.exposeString('uuid'),
    url: t.exposeString('url'),
    filename: t.exposeString('filename'),
    contentType: t.exposeString('contentType'),
  }),
});

const SigningFormFieldRef = builder.objectRef<SigningFormField>('SigningFormField').implement({
  fields: (t) => ({
    uuid: t.exposeString('uuid'),
    name: t.exposeString('name'),
    type: t.exposeString('type'),
    required: t.exposeBoolean('required'),
    readonly: t.exposeBoolean('readonly'),
    own: t.exposeBoolean('own', { description: 'False: another party’s completed value, shown read-only.' }),
    role: t.exposeString('role'),
    title: t.exposeString('title', { nullable: true }),
    description: t.exposeString('description', { nullable: true }),
    areas: t.field({
      type: [AreaRef],
      description: 'Fractions of the displayed page, y from the top, page 0-based.',
      resolve: (f) => f.areas,
    }),
    options: t.field({ type: [FieldOptionRef], nullable: true, resolve: (f) => f.options }),
    preferences: t.field({ type: 'JSON', description: 'format, font_size, align, ...', resolve: (f) => f.preferences }),
    validation: t.field({
      type: 'JSON',
      nullable: true,
      description: '{pattern, message} or null.',
      resolve: (f) => f.validation,
    }),
    conditions: t.field({
      type: [FieldConditionRef],
      nullable: true,
      description:
        'Show and require the field only while these hold, judged as the signer types: the conditions naming ' +
        'this signer’s own fields (those naming other parties’ fields are judged when the form is loaded; a ' +
        'field they hide is not listed). Null when there are none (docs/signing-form.md "Conditions").',
      resolve: (f) => f.conditions,
    }),
    defaultValue: t.field({ type: 'JSON', nullable: true, resolve: (f) => f.defaultValue }),
    value: t.field({
      type: 'JSON',
      nullable: true,
      description:
        'The current value: the saved one, else the prefilled default; for signature/initials/image/stamp an ' +
        'attachment uuid, for file an array of them.',
      resolve: (f) => f.value,
    }),
    attachments: t.field({
      type: [SigningFormAttachmentRef],
      description: 'For attachment values: each attachment the value names, with a signed URL.',
      resolve: (f) => f.attachments,
    }),
  }),
});

const SigningFormConsentRef = builder.objectRef<SigningFormView['consent']>('SigningFormConsent').implement({
  description:
    'The electronic-signature disclosure the signer accepts before the first signature and before completing ' +
    '(docs/signing-form.md "Consent").',
  fields: (t) => ({
    text: t.exposeString('text', {
      description:
        'The disclosure, paragraphs split by a blank line: the account’s own text, else Signet’s in the ' +
        'language asked for.',
    }),
    version: t.exposeString('version', {
      description:
        'Names this exact text: `<default|account>-<language>-<12 hex digits of its SHA-256>`. ' +
        'acceptSigningConsent takes it.',
    }),
    acceptedAt: t.expose('acceptedAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When the signer accepted (any version), else null.',
    }),
    acceptedVersion: t.exposeString('acceptedVersion', {
      nullable: true,
      description: 'The version the signer accepted last, else null.',
    }),
  }),
});

const SigningFormRef = builder.objectRef<SigningFormView>('SigningForm').implement({
  description: 'A signer’s form, reached by its slug (docs/signing-form.md).',
  fields: (t) => ({
    slug: t.exposeString('slug'),
    state: t.field({ type: SigningFormStateRef, resolve: (f) => f.state }),
    message: t.exposeString('message', {
      nullable: true,
      description: 'DocuSeal’s message when state is not OPEN (e.g. "Form has been completed already."), else null.',
    }),
    waitingFor: t.exposeString('waitingFor', {
      nullable: true,
      description:
        'With order `preserved`, while an earlier party has not completed: that party’s role name (the page shows ' +
        'it; completing is refused). Null otherwise.',
    }),
    accountName: t.exposeString('accountName'),
    submitter: t.field({ type: SigningFormSubmitterRef, resolve: (f) => f.submitter }),
    submission: t.field({ type: SigningFormSubmissionRef, resolve: (f) => f.submission }),
    documents: t.field({ type: [SigningFormDocumentRef], resolve: (f) => f.documents }),
    fields: t.field({
      type: [SigningFormFieldRef],
      description:
        'This signer’s fields, plus other parties’ fields that have a completed value (own: false, readonly).',
      resolve: (f) => f.fields,
    }),
    completedDocuments: t.field({
      type: [DocumentLinkRef],
      description: 'Signed copies to download once the whole submission is completed (empty before).',
      resolve: (f) => f.completedDocuments,
    }),
    completedRedirectUrl: t.exposeString('completedRedirectUrl', {
      nullable: true,
      description:
        'Where to go after completing (the submitter’s, else the submission’s completed_redirect_url), or null.',
    }),
    goToLast: t.exposeBoolean('goToLast', {
      description:
        'Open the form at the first field still to fill: the submitter’s go_to_last, else whether it had opened ' +
        'the form before.',
    }),
    consent: t.field({
      type: SigningFormConsentRef,
      description:
        'The electronic-signature disclosure: the account’s own text, else Signet’s in `language` (the page’s ' +
        'language; an unknown tag is passed over), else in the signer’s language (docs/signing-form.md "Consent").',
      args: { language: t.arg.string() },
      resolve: (f, { language }) => (language ? consentIn(f, language) : f.consent),
    }),
    eventDetail: t.field({
      type: 'JSON',
      description:
        'The submitter as the form.* webhooks’ `data` shows it now (DocuSeal’s keys): the `detail` of the embedded ' +
        'form’s load, completed and declined events (docs/embedding.md).',
      resolve: (f, _args, ctx) =>
        loadFormEventDetail({ db: ctx.db, files: ctx.files, appUrl: ctx.config.appUrl }, f.slug),
    }),
  }),
});

/** The services' dependencies and the signer's request, from the context (no API key involved). */
const depsOf = (ctx: GraphQLContext): SigningFormDeps => ({ db: ctx.db, files: ctx.files, effects: ctx.effects });
const requestOf = (ctx: GraphQLContext, slug: string): SignerRequest => ({
  slug,
  ip: ctx.ip,
  userAgent: ctx.userAgent,
});

builder.queryField('signingForm', (t) =>
  t.field({
    type: SigningFormRef,
    description: 'The form of the signer with this slug. NOT_FOUND (REST 404) for an unknown slug. Records nothing.',
    args: { slug: t.arg.string({ required: true }) },
    resolve: (_root, { slug }, ctx) => loadSigningForm(depsOf(ctx), { slug }),
  }),
);

builder.mutationField('openSigningForm', (t) =>
  t.field({
    type: SigningFormRef,
    description:
      'The page calls this on every load: records a `view_form` event (IP, user agent), sets opened_at (every open, ' +
      'as DocuSeal), emits form.viewed on the first open only. Nothing is recorded when the form is not OPEN.',
    args: { slug: t.arg.string({ required: true }) },
    resolve: (_root, { slug }, ctx) => openSigningForm(depsOf(ctx), requestOf(ctx, slug)),
  }),
);

builder.mutationField('recordEmailClick', (t) =>
  t.boolean({
    description:
      'The page calls this when opened from a request email (`?t=` on the link): records a `click_email` event ' +
      '(IP, user agent) when `t` is the signer’s tag; false otherwise. NOT_FOUND (REST 404) for an unknown slug.',
    args: { slug: t.arg.string({ required: true }), t: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) =>
      recordEmailClick({ db: ctx.db, emailClicks: ctx.emailClicks }, { ...requestOf(ctx, args.slug), t: args.t }),
  }),
);

builder.mutationField('acceptSigningConsent', (t) =>
  t.field({
    type: SigningFormRef,
    description:
      'The signer accepts the electronic-signature disclosure of `version` (SigningForm.consent.version): records a ' +
      '`consent_accepted` event (IP, user agent, version, language, SHA-256 of the text), which the audit log ' +
      'prints. Accepting the version last accepted again records nothing. Refusals: 422 with DocuSeal’s message ' +
      'when the form is not OPEN; 422 "Disclosure version … is not the current one …".',
    args: { slug: t.arg.string({ required: true }), version: t.arg.string({ required: true }) },
    resolve: (_root, { slug, version }, ctx) => acceptSigningConsent(depsOf(ctx), { ...requestOf(ctx, slug), version }),
  }),
);

builder.mutationField('saveSigningFormValues', (t) =>
  t.field({
    type: SigningFormRef,
    description:
      'Saves values (merged into the saved ones; null clears one), keyed by field uuid. The first save records ' +
      '`start_form` and emits form.started. Refusals: 422 with DocuSeal’s messages, and per field "Missing field" ' +
      '/ "Invalid field" / "Read-only field" (extensions.fieldUuid). ' +
      'Required and patterns are checked on completion only. A signature or initials value is refused (422) until ' +
      'the signer accepted the disclosure (acceptSigningConsent).',
    args: { slug: t.arg.string({ required: true }), values: t.arg({ type: 'JSON', required: true }) },
    resolve: (_root, { slug, values }, ctx) => saveSigningFormValues(depsOf(ctx), { ...requestOf(ctx, slug), values }),
  }),
);

builder.mutationField('completeSigningForm', (t) =>
  t.field({
    type: SigningFormRef,
    description:
      'Saves `values` (optional) and completes: required fields filled, text matching validation.pattern, values ' +
      'sensible for their type — otherwise 422 with extensions.fieldUuid. With order `preserved`, earlier parties ' +
      'must have completed ("Waiting for <role> to complete the form."), and the signer must have accepted the ' +
      'electronic-signature disclosure (acceptSigningConsent; else 422). Records `complete_form`, sets ' +
      'completed_at, runs the completion pipeline and sends the next party’s request.',
    args: { slug: t.arg.string({ required: true }), values: t.arg({ type: 'JSON' }) },
    resolve: (_root, { slug, values }, ctx) =>
      completeSigningForm(depsOf(ctx), { ...requestOf(ctx, slug), values: values ?? undefined }),
  }),
);

builder.mutationField('declineSigningForm', (t) =>
  t.field({
    type: SigningFormRef,
    description: 'Declines with a reason: declined_at, decline_reason, a `decline_form` event {reason}, form.declined.',
    args: { slug: t.arg.string({ required: true }), reason: t.arg.string({ required: true }) },
    resolve: (_root, { slug, reason }, ctx) => declineSigningForm(depsOf(ctx), { ...requestOf(ctx, slug), reason }),
  }),
);
