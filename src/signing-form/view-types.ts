/**
 * The signing form's view (docs/signing-form.md, `SigningForm`), one definition for the server
 * (load-signing-form.ts builds it, src/graphql/schema/signing-form.ts exposes it) and the page
 * (page/types.ts, which receives it from GraphQL). The two differ only in how a time and an area
 * travel: the server holds `Date`s and the stored areas (snake_case, templates/fields.ts `Area`),
 * the page receives ISO 8601 strings and GraphQL's `FieldArea` (camelCase). Types only: the page's
 * bundle imports nothing from the server at run time.
 */
import type { FieldCondition } from '../templates/field-conditions.ts';

/** Where a form stands for its signer (form-state.ts formStateOf). */
export type SigningFormState = 'OPEN' | 'COMPLETED' | 'DECLINED' | 'ARCHIVED' | 'EXPIRED';

export interface SigningFormAttachment {
  uuid: string;
  url: string;
  filename: string;
  contentType: string;
}

/** A field as the signer sees it; `TArea` is the server's stored area or the page's FieldArea. */
export interface SigningFormFieldOf<TArea> {
  uuid: string;
  name: string;
  type: string;
  required: boolean;
  readonly: boolean;
  /** False: another party's completed value, shown read-only. */
  own: boolean;
  /** The role name of the party the field belongs to. */
  role: string;
  title: string | null;
  description: string | null;
  /** Fractions of the displayed page, y from the top, page 0-based. */
  areas: TArea[];
  options: { value: string; uuid: string }[] | null;
  preferences: Record<string, unknown>;
  /**
   * The conditions the page judges as the signer types (src/templates/field-conditions.ts): those
   * naming this signer's own fields; those naming other parties' fields are judged when the form
   * is loaded (a field they hide is not in the view). Null when none is left.
   */
  conditions: FieldCondition[] | null;
  /** `{pattern, message}` when the field has a pattern (field-pattern.ts), else null. */
  validation: { pattern?: unknown; message?: unknown; [key: string]: unknown } | null;
  defaultValue: unknown;
  /** The saved value, else the default; attachment uuid(s) for attachment types. */
  value: unknown;
  attachments: SigningFormAttachment[];
}

export interface SigningFormDocument {
  /** The attachment uuid areas refer to. */
  uuid: string;
  name: string;
  /** Signed URL of the PDF. */
  url: string;
  /** Each page as displayed (after /Rotate), in PDF points. */
  pages: { width: number; height: number }[];
}

/** The whole view; `TTime` is `Date` on the server and an ISO 8601 string on the page. */
export interface SigningFormViewOf<TTime, TArea> {
  slug: string;
  state: SigningFormState;
  message: string | null;
  /** Role name of the earlier party this one waits for (order `preserved`), else null. */
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
    openedAt: TTime | null;
    completedAt: TTime | null;
    declinedAt: TTime | null;
  };
  submission: {
    id: number;
    name: string | null;
    /** The template's name: what the page calls the documents when the submission has no name. */
    templateName: string;
    status: string;
    order: string;
    expireAt: TTime | null;
  };
  documents: SigningFormDocument[];
  fields: SigningFormFieldOf<TArea>[];
  /** The signed documents to download once the whole submission is completed; [] before. */
  completedDocuments: { name: string; url: string }[];
  completedRedirectUrl: string | null;
  /**
   * Open the form at the first field still to fill rather than at the top (DocuSeal's
   * `data-go-to-last`): the submitter's `go_to_last` preference, else whether it had opened the
   * form before.
   */
  goToLast: boolean;
  /**
   * The electronic-signature disclosure the signer accepts before signing (signing-consent.ts):
   * its text (paragraphs split by a blank line) in the signer's language or the account's own, the
   * version naming that exact text, and when the signer accepted (any version) and which version
   * it accepted last, else null.
   */
  consent: { text: string; version: string; acceptedAt: TTime | null; acceptedVersion: string | null };
}
