/**
 * The signing form as the page receives it from GraphQL (docs/signing-form.md, `SigningForm`):
 * the server's view (../view-types.ts, one definition for both) with times and areas as they travel.
 * Areas are fractions (0..1) of the displayed page, y from the top, page 0-based; page sizes are
 * PDF points of the page as displayed.
 */

import type { SigningFormFieldOf, SigningFormViewOf } from '../view-types.ts';

export type { SigningFormAttachment, SigningFormDocument, SigningFormState } from '../view-types.ts';

/** An area as GraphQL's `FieldArea` sends it. */
export interface FieldArea {
  attachmentUuid: string;
  page: number;
  x: number;
  y: number;
  w: number;
  h: number;
  optionUuid: string | null;
  cellW: number | null;
}

export interface FieldOption {
  uuid: string;
  value: string;
}

export type SigningFormField = SigningFormFieldOf<FieldArea>;

/** The view as the page receives it: the server's (view-types.ts), times as ISO 8601 strings. */
export type SigningForm = SigningFormViewOf<string, FieldArea>;

/** Field values keyed by field uuid, in their stored shapes (docuseal-behaviour.md §11). */
export type FieldValues = Record<string, unknown>;

/** What POST /api/attachments answers. */
export interface UploadedAttachment {
  uuid: string;
  url: string;
  filename: string;
  content_type: string;
}
