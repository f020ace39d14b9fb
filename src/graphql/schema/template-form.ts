/**
 * A template's shared link over GraphQL (docs/embedding.md "Template links"): `startTemplateForm`,
 * which the page at `/d/{slug}` calls with the signer's email (the embedded form's `data-email`,
 * or its email step). No API key: the template's slug and its `shared_link` are the permission.
 * An adapter over src/signing-form/start-template-form.ts; its input is derived from the one
 * definition there (StartTemplateFormRequest).
 */
import { StartTemplateFormRequest, startTemplateForm } from '../../signing-form/start-template-form.ts';
import { builder } from '../builder.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';

const StartTemplateFormInput = zodInputType('StartTemplateFormInput', StartTemplateFormRequest, {
  description: 'The signer of a template link, in the embedded form’s terms (data-email, data-values, …).',
});

const TemplateFormStartRef = builder
  .objectRef<{ slug: string; embedSrc: string; created: boolean }>('TemplateFormStart')
  .implement({
    description: 'The signer’s own form, to go to.',
    fields: (t) => ({
      slug: t.exposeString('slug', { description: 'The submitter’s slug: its form is /s/{slug}.' }),
      embedSrc: t.exposeString('embedSrc', { description: '{APP_URL}/s/{slug}.' }),
      created: t.exposeBoolean('created', {
        description: 'True: a submission was created now; false: the signer’s existing one was found again.',
      }),
    }),
  });

builder.mutationField('startTemplateForm', (t) =>
  t.field({
    type: TemplateFormStartRef,
    description:
      'Starts signing a shared template (`shared_link`) as the given email: creates a submission for it (source ' +
      '`link`, no request sent; submission.created and its webhooks as any create), or finds again the one this ' +
      'email started from the same address. NOT_FOUND when the template is unknown, not shared or archived; ' +
      'VALIDATION for a missing email, an unknown role, several roles and none named, a value for a file field; ' +
      'RATE_LIMITED ("Too many attempts.") past TEMPLATE_LINK_STARTS_PER_IP / _PER_TEMPLATE new submissions an hour.',
    args: {
      slug: t.arg.string({ required: true, description: 'The template’s slug (its link /d/{slug}).' }),
      input: t.arg({ type: StartTemplateFormInput, required: true }),
    },
    resolve: (_root, { slug, input }, ctx) =>
      startTemplateForm(ctx, {
        slug,
        input: fromGraphQLInput(StartTemplateFormRequest, input),
        ip: ctx.ip,
        userAgent: ctx.userAgent,
      }),
  }),
);
