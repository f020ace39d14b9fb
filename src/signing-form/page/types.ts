/**
 * The signing form as the page receives it from GraphQL (docs/signing-form.md, `SigningForm`).
 * Areas are fractions (0..1) of the displayed page, y from the top, page 0-based; page sizes are
 * PDF points of the page as displayed.
 */

export type SigningFormState = 'OPEN' | 'COMPLETED' | 'DECLINED' | 'ARCHIVED' | 'EXPIRED';

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

export interface SigningFormAttachment {
  uuid: string;
  url: string;
  filename: string;
  contentType: string;
}

export interface SigningFormField {
  uuid: string;
  name: string;
  type: string;
  required: boolean;
  readonly: boolean;
  /** False: another party's completed value, shown read-only. */
  own: boolean;
  role: string;
  title: string | null;
  description: string | null;
  areas: FieldArea[];
  options: FieldOption[] | null;
  preferences: Record<string, unknown>;
  validation: { pattern?: unknown; message?: unknown } | null;
  defaultValue: unknown;
  /** Saved value, else the prefilled default (attachment uuid(s) for signature/initials/image/stamp/file). */
  value: unknown;
  attachments: SigningFormAttachment[];
}

export interface SigningFormDocument {
  uuid: string;
  name: string;
  url: string;
  pages: { width: number; height: number }[];
}

export interface SigningForm {
  slug: string;
  state: SigningFormState;
  message: string | null;
  waitingFor: string | null;
  accountName: string;
  submitter: {
    id: number;
    uuid: string;
    name: string | null;
    email: string | null;
    phone: string | null;
    role: string;
    status: string;
    openedAt: string | null;
    completedAt: string | null;
    declinedAt: string | null;
  };
  submission: { id: number; name: string | null; status: string; order: string; expireAt: string | null };
  documents: SigningFormDocument[];
  fields: SigningFormField[];
  completedDocuments: { name: string; url: string }[];
  completedRedirectUrl: string | null;
}

/** Field values keyed by field uuid, in their stored shapes (docuseal-behaviour.md §11). */
export type FieldValues = Record<string, unknown>;

/** What POST /api/attachments answers. */
export interface UploadedAttachment {
  uuid: string;
  url: string;
  filename: string;
  content_type: string;
}
