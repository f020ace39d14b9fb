/**
 * A template without fields (issue 13). DocuSeal accepts one when it is created and refuses it only
 * when a submission is made from it: 422 `{"error":"Template does not contain fields"}`
 * (app/controllers/api/submissions_controller.rb, `maybe_return_template_error`;
 * reference/docuseal-behaviour.md §3 and §7.0). Signet accepts it too (its fields may come later:
 * the same request again with its `external_id`, or a document with {{text tags}} through
 * PUT /templates/{id}/documents), but says so in the response of every change that leaves a
 * template without fields, and the refusal at submission time names the template.
 * docs/compatibility.md, "Templates without fields".
 */
import { AppError } from '../errors.ts';

/** A warning's machine-readable code; the message is for people. */
export const TEMPLATE_WARNING_CODES = ['TEMPLATE_HAS_NO_FIELDS'] as const;
export type TemplateWarningCode = (typeof TEMPLATE_WARNING_CODES)[number];

/** Something about an accepted template that its user should know before using it. */
export interface TemplateWarning {
  code: TemplateWarningCode;
  message: string;
}

/** DocuSeal's message for a submission from a template without fields; Signet's message starts with it. */
export const NO_FIELDS_MESSAGE = 'Template does not contain fields';

/**
 * The warnings about a template as it is now.
 * @param template its fields as stored (the `fields` JSON column: an array; anything else counts as none)
 * @returns [] for a usable template; `TEMPLATE_HAS_NO_FIELDS` when it has no field at all
 */
export function templateWarnings(template: { fields: unknown }): TemplateWarning[] {
  if (Array.isArray(template.fields) && template.fields.length > 0) return [];
  return [
    {
      code: 'TEMPLATE_HAS_NO_FIELDS',
      message:
        'The template has no fields: creating a submission from it is refused (422 "Template does not contain ' +
        'fields") until it has some. ' +
        'Add fields (`fields`, or {{text tags}} in a document) by sending the template again with the same ' +
        'external_id, or through PUT /api/templates/{id}/documents (GraphQL: updateTemplateDocuments).',
    },
  ];
}

/**
 * The refusal of a submission from a template without fields: DocuSeal's message, then which
 * template and what to do, so that a client matching DocuSeal's text by its start still matches.
 * @param template the template's id and name
 * @returns AppError VALIDATION (REST 422 `{"error": …}`, GraphQL `extensions.code` VALIDATION), e.g.
 *   `Template does not contain fields: template 42 ("NDA") has no fields to fill in or sign; add
 *   fields to it before creating submissions.`
 */
export function noFieldsError(template: { id: number; name: string }): AppError {
  return new AppError(
    'VALIDATION',
    `${NO_FIELDS_MESSAGE}: template ${template.id} (${JSON.stringify(template.name)}) has no fields to fill in ` +
      'or sign; add fields to it before creating submissions.',
  );
}
