/**
 * Input limits (issue 12 "Huge values"; DESIGN.md "limits"): the largest string, list and JSON
 * object the service accepts, each stated once here. Input definitions take their maxima from
 * this module — zod schemas through `text()`, `list()` and `jsonObject()`, the few checks outside
 * zod through `checkText()` / `checkJson()` — and docs/security.md "Input limits" lists them with
 * the error a client gets. Over a limit → AppError VALIDATION (REST 422 `{"error": ...}`,
 * GraphQL `extensions.code` VALIDATION with `extensions.details.path`), naming the input by its
 * DocuSeal (REST) key: "submitters[0].name is too long (maximum is 255 characters)."
 *
 * Why these sizes (DocuSeal documents none): names, e-mails and ids are keys shown in lists and
 * e-mails, 255 characters (a Rails string column). A text value is drawn into its area when the
 * submission completes, on the event loop: ~160 ms for 10,000 characters in one area, ~0.6–0.9 s
 * for 64,000, ~1.2 s for 100 areas of 1,000 (measured with src/signing/draw-values.ts, one core),
 * and a 1–3 MB value held the loop 5.5–18.9 s. So one value is capped at 10,000 characters and a
 * party's values at 64 KiB of JSON together. A template's fields are copied into each of its
 * submissions and parsed at every form load and completion: 500 fields, 1 MB of JSON together.
 *
 * Library: zod, which defines every input already, checks lengths and counts (`.max()`); JSON
 * objects are measured here (zod has no size or depth check), depth first and without recursion,
 * so that a deeply nested value cannot overflow the stack while it is measured.
 */
import { z } from 'zod';
import { AppError } from './errors.ts';
import { snakeKey } from './input-shape.ts';

/** Longest accepted strings, in characters (UTF-16 code units, as JavaScript counts `length`). */
export const MAX_LENGTH = {
  /** Names: templates, documents, submissions, submitters, roles, fields, folder levels, API keys, accounts, users. */
  name: 255,
  /** An e-mail address, or DocuSeal's list of them ("a@x.com, b@y.com"): submitter, reply_to, bcc_completed. */
  email: 255,
  /** A phone number as given (E.164 once normalised). */
  phone: 64,
  /** `external_id` of templates and submitters (and the earlier `application_key`). */
  externalId: 255,
  /** A template's full folder name, levels joined with " / " ("Clients / 2026"). */
  folderName: 1_000,
  /** `completed_redirect_url` and webhook URLs. */
  url: 2_048,
  /** Short text shown to people: field titles, option values, a field's invalid message, an e-mail subject. */
  label: 1_000,
  /**
   * A field's value (text, number, date, phone, cells, an option)
   * and its default value; a field's description; a decline reason.
   */
  text: 10_000,
  /** An e-mail body (`message.body`). */
  messageBody: 20_000,
  /** A field's `validation.pattern` (src/templates/field-pattern.ts). */
  pattern: 1_000,
  /** Filters of list queries (q, slug, external_id, folder, event type). */
  filter: 255,
  /** An `Idempotency-Key` header (Stripe's maximum; docs/idempotency.md). */
  idempotencyKey: 255,
  /** A webhook endpoint's custom header: name and value (RFC 9110 field). */
  headerName: 256,
  headerValue: 4_096,
  /**
   * A typed signature or initials (src/documents/typed-signature.ts), in Unicode code points: DocuSeal
   * reads a signature value under 60 characters as typed text (lib/submitters/normalize_values.rb).
   */
  typedSignature: 59,
  /**
   * A language tag: a submitter's or submission's `language`, an account's `default_language`
   * (src/i18n/signer-language.ts; RFC 5646 §4.4.1: at least 35 characters must be kept).
   */
  languageTag: 35,
  /**
   * An account's own electronic-signature disclosure, per language (`signing_consent_text`;
   * src/signing-form/signing-consent.ts): shown whole in the consent dialog; the default texts are
   * about 1,000 characters.
   */
  consentText: 20_000,
} as const;

/** Longest accepted lists, in entries. */
export const MAX_ITEMS = {
  /** Submitters of one submission (more than a template has roles are dropped anyway, as DocuSeal). */
  submitters: 50,
  /** Submissions made by one request: `/submissions/emails` addresses, the earlier `submissions: [...]` shape. */
  submissions: 100,
  /** Documents of a template, and document changes in one `PUT /templates/{id}/documents`. */
  documents: 50,
  /** Fields of a template; also per submitter: `fields` settings, `readonly_fields`, `values` entries. */
  fields: 500,
  /** Areas of one field. */
  areas: 100,
  /** Conditions of one field (src/templates/field-conditions.ts). */
  conditions: 50,
  /** Options of one select, radio or multiple field (and the options chosen in a multiple value). */
  options: 500,
  /** Roles of a template (`roles` of an update or merge). */
  roles: 50,
  /** Templates merged by one request. */
  templateIds: 20,
  /** Event types of a webhook endpoint. */
  events: 50,
  /** Levels of a folder name ("Clients / 2026" has 2). */
  folderLevels: 10,
  /**
   * Different typed signatures one create or update request renders to images (src/documents/
   * typed-signature.ts: up to ~10 ms each on an idle core, on the event loop); the same text again is free.
   */
  typedSignatures: 100,
  /** Rows of one bulk send (CSV data rows after the header, or JSON `rows`): issue 16. */
  bulkSendRows: 10_000,
  /** Columns of a bulk send's CSV (or keys of one JSON row), and entries of its `columns` mapping. */
  bulkSendColumns: 200,
  /** Bulk sends of one account not yet completed: a new one is refused while this many run. */
  activeBulkSends: 10,
  /**
   * Webhook endpoints of one account (issue 23: deliveries are fanned out to each, and each holds
   * delivery slots; Stripe allows 16 per account, Svix's plans 50): an endpoint more is refused.
   */
  webhookEndpoints: 20,
  /** Template folders one API key is limited to (`--folders`, `createApiKey` `folders`; src/accounts/key-scopes.ts). */
  apiKeyFolders: 50,
} as const;

/**
 * Reminders (src/notifications/reminder-settings.ts): at most `count` reminders per party and
 * address (DocuSeal Pro offers three), and no wait longer than `hours` (a year; DocuSeal's longest
 * is 30 days) before the first or between two.
 */
export const MAX_REMINDER = { count: 10, hours: 8_760 } as const;

/**
 * Largest bulk-send data (src/submissions/bulk-send-rows.ts), in bytes: the CSV text as UTF-8, or
 * the JSON `rows` as JSON. 10,000 rows of ~1 KB each; checked before any row is read, so a larger
 * file costs nothing but its upload (and MAX_BODY_SIZE_MB refuses larger bodies with 413 first).
 */
export const MAX_BULK_SEND_BYTES = 10 * 1024 * 1024;

/** Invitations per minute a bulk send may ask for (`rate_per_minute`, BULK_SEND_RATE_PER_MINUTE). */
export const BULK_SEND_RATE_PER_MINUTE = { min: 1, max: 60_000 } as const;

/**
 * Combined PDFs (final documents + audit log, signed) one request may make on demand
 * (`include=combined_document_url`, GraphQL `combinedDocumentUrl(ensure: true)`): each merges and
 * signs a whole submission's documents. Items beyond it keep a null URL until a later request.
 */
export const COMBINED_DOCUMENTS_PER_REQUEST = 10;

/** Signatures and timestamps (issue 17; docs/signatures.md). */
export const PKI_LIMITS = {
  /** Largest timestamp token embedded, in bytes: the space a signature reserves for it. */
  timestampTokenBytes: 16 * 1024,
  /** Largest answer read from TSA_URL, in bytes. */
  timestampResponseBytes: 64 * 1024,
  /** Largest CRL downloaded for a certificate of a signature, in bytes. */
  crlBytes: 4 * 1024 * 1024,
  /** Largest PKCS#12 an account uploads, in bytes. */
  pkcs12Bytes: 64 * 1024,
  /** Longest PKCS#12 password and certificate name, in characters. */
  pkcs12Password: 1024,
  certificateName: 200,
  /** Signing certificates one account keeps (revoked ones included). */
  certificatesPerAccount: 50,
} as const;

/**
 * What one PDF may make Signet read (issue 23 item 3; docs/security.md "PDFs"): over any, a 422
 * naming it. Checked in the parse pool (src/parse-pool/), whose time and memory limits bound the rest.
 */
export const PDF_LIMITS = {
  /**
   * Objects of one file, as mupdf counts them (its cross-reference table, after any repair):
   * every object costs mupdf memory once read. Real documents hold thousands (a 2,000-page merge
   * of scans ~20,000); the largest of the shared fixtures a few hundred.
   */
  objects: 500_000,
  /** Signatures /tools/verify checks in one file: more is refused, not cut short. */
  signatures: 50,
  /**
   * Bytes /tools/verify reads out of one file's streams, together: decompressed (the DSS's
   * certificates and CRLs) and raw (the objects compared across revisions). One stream larger than
   * the parse pool's memory limit fails on that limit first.
   */
  streamBytes: 64 * 1024 * 1024,
} as const;

/** Largest CRL downloaded (PKI_LIMITS.crlBytes). */
export const CRL_MAX_BYTES = PKI_LIMITS.crlBytes;

/** A JSON object's limits: its length as JSON text (characters) and its nesting depth (an object = 1). */
export interface JsonLimit {
  characters: number;
  depth: number;
}

/** Largest accepted JSON objects. */
export const MAX_JSON = {
  /** A submitter's `metadata`, a submission's `variables`. */
  metadata: { characters: 65_536, depth: 10 },
  /** A field's or a submitter field setting's `preferences` and `validation`. */
  preferences: { characters: 4_096, depth: 5 },
  /** All values of one submitter together, as stored (attachments as their uuids). */
  values: { characters: 65_536, depth: 3 },
  /** All fields of a template together, as stored (they are copied into each submission). */
  templateFields: { characters: 1_000_000, depth: 8 },
} as const satisfies Record<string, JsonLimit>;

/** "<path> is too long (maximum is N characters)." — Rails' wording, with the input's path. */
export function tooLongMessage(path: string, maximum: number): string {
  return `${path} is too long (maximum is ${maximum} characters).`;
}

/** "<path> has too many entries (maximum is N)." */
export function tooManyMessage(path: string, maximum: number): string {
  return `${path} has too many entries (maximum is ${maximum}).`;
}

/**
 * A zod string of at most `maximum` characters. The message is made by parseInput
 * (src/accounts/api-keys.ts) from the issue, with the input's path.
 */
export const text = (maximum: number) => z.string().max(maximum);

/** A zod list of at most `maximum` entries (message as for `text`). */
export const list = <T extends z.ZodType>(item: T, maximum: number) => z.array(item).max(maximum);

/** Marks a zod custom issue as a limit, for parseInput's message. */
interface LimitIssueParams {
  limit: 'json_characters' | 'json_depth' | 'entries' | 'key';
  maximum: number;
}

/**
 * A zod object of any values with at most `maxKeys` keys of at most `maxKeyLength` characters
 * (a submitter's `values`: its values are measured once matched to their fields).
 */
export const record = (maxKeys: number, maxKeyLength: number) =>
  z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const keys = Object.keys(value);
    if (keys.length > maxKeys)
      ctx.addIssue({
        code: 'custom',
        message: 'too many entries',
        params: { limit: 'entries', maximum: maxKeys } satisfies LimitIssueParams,
      });
    else if (keys.some((key) => key.length > maxKeyLength))
      ctx.addIssue({
        code: 'custom',
        message: 'key too long',
        params: { limit: 'key', maximum: maxKeyLength } satisfies LimitIssueParams,
      });
  });

/**
 * A zod JSON object (string keys) within `limit` (see checkJson): the issue names the object's path.
 * @param maxKeys when given, at most this many keys (e.g. a submitter's `values`: MAX_ITEMS.fields)
 */
export const jsonObject = (limit: JsonLimit, maxKeys?: number) =>
  z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    if (maxKeys !== undefined && Object.keys(value).length > maxKeys) {
      ctx.addIssue({
        code: 'custom',
        message: 'too many entries',
        params: { limit: 'entries', maximum: maxKeys } satisfies LimitIssueParams,
      });
      return;
    }
    const problem = jsonProblem(value, limit);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.limit, params: problem });
  });

/**
 * parseInput's message for a zod issue that is a limit (a string or list `.max()`, a jsonObject
 * check) and the limit, else undefined.
 * @param path the input's path as messages write it ("submitters[0].name")
 */
export function limitMessage(issue: z.core.$ZodIssue, path: string): { message: string; maximum: number } | undefined {
  if (issue.code === 'too_big' && (issue.origin === 'string' || issue.origin === 'array')) {
    const maximum = Number(issue.maximum);
    return {
      message: issue.origin === 'string' ? tooLongMessage(path, maximum) : tooManyMessage(path, maximum),
      maximum,
    };
  }
  if (issue.code === 'custom') {
    const params = issue.params as Partial<LimitIssueParams> | undefined;
    if (params?.limit && typeof params.maximum === 'number')
      return { message: jsonLimitMessage(path, params as LimitIssueParams), maximum: params.maximum };
  }
  return undefined;
}

function jsonLimitMessage(path: string, problem: LimitIssueParams): string {
  switch (problem.limit) {
    case 'entries':
      return tooManyMessage(path, problem.maximum);
    case 'key':
      return `${path} has a key that is too long (maximum is ${problem.maximum} characters).`;
    case 'json_depth':
      return `${path} is nested too deeply (maximum depth is ${problem.maximum}).`;
    default:
      return `${path} is too large (maximum is ${problem.maximum} characters as JSON).`;
  }
}

/**
 * What is wrong with a JSON value against `limit`, or undefined. Depth is measured first, with an
 * explicit stack (no recursion), so that the length is measured (JSON.stringify) only on values
 * shallow enough to serialise safely.
 */
function jsonProblem(value: unknown, limit: JsonLimit): LimitIssueParams | undefined {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit.depth) return { limit: 'json_depth', maximum: limit.depth };
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  const length = JSON.stringify(value)?.length ?? 0;
  return length > limit.characters ? { limit: 'json_characters', maximum: limit.characters } : undefined;
}

/**
 * Checks a string outside a zod schema.
 * @param path the input's path as messages write it ("reason", "submitters[0].values.Comment")
 * @throws AppError VALIDATION "<path> is too long (maximum is N characters)." with details {path, maximum}
 */
export function checkText(value: string | null | undefined, maximum: number, path: string): void {
  if (typeof value === 'string' && value.length > maximum) {
    throw new AppError('VALIDATION', tooLongMessage(path, maximum), { details: { path, maximum } });
  }
}

/**
 * Checks a list's length outside a zod schema.
 * @throws AppError VALIDATION "<path> has too many entries (maximum is N)." with details {path, maximum}
 */
export function checkItems(value: readonly unknown[] | null | undefined, maximum: number, path: string): void {
  if (Array.isArray(value) && value.length > maximum) {
    throw new AppError('VALIDATION', tooManyMessage(path, maximum), { details: { path, maximum } });
  }
}

/**
 * Checks a JSON value's depth and length outside a zod schema.
 * @throws AppError VALIDATION "<path> is nested too deeply (maximum depth is N)." or
 *   "<path> is too large (maximum is N characters as JSON)." with details {path, maximum}
 */
export function checkJson(value: unknown, limit: JsonLimit, path: string): void {
  const problem = jsonProblem(value, limit);
  if (problem)
    throw new AppError('VALIDATION', jsonLimitMessage(path, problem), { details: { path, maximum: problem.maximum } });
}

/**
 * What is wrong with a field value's size (text at most MAX_LENGTH.text characters,
 * a list at most MAX_ITEMS.options entries of that length), as a message about `subject` (the
 * field's name, or the value's path in a request), or undefined.
 */
export function valueSizeMessage(value: unknown, subject: string): string | undefined {
  if (typeof value === 'string')
    return value.length > MAX_LENGTH.text ? tooLongMessage(subject, MAX_LENGTH.text) : undefined;
  if (!Array.isArray(value)) return undefined;
  if (value.length > MAX_ITEMS.options) return tooManyMessage(subject, MAX_ITEMS.options);
  return value.some((item) => typeof item === 'string' && item.length > MAX_LENGTH.text)
    ? tooLongMessage(subject, MAX_LENGTH.text)
    : undefined;
}

/**
 * All values of a party together, as they will be stored: at most MAX_JSON.values. Used by the
 * signing form and by the API's values (src/submissions/create-submissions.ts), like valueSizeMessage.
 * @throws AppError VALIDATION "values is too large (maximum is 65536 characters as JSON)."
 */
export function checkValuesSize(values: Record<string, unknown>, path = 'values'): void {
  checkJson(values, MAX_JSON.values, path);
}

/**
 * An input path as messages write it, with DocuSeal's (REST) keys: ["submitters", 0, "name"] →
 * "submitters[0].name", ["folderName"] → "folder_name" (GraphQL inputs are the camelCase of the
 * same keys); after `at` when given.
 */
export function formatPath(segments: readonly PropertyKey[], at = ''): string {
  let path = at;
  for (const segment of segments) {
    if (typeof segment === 'number') {
      path += `[${segment}]`;
      continue;
    }
    const key = snakeKey(String(segment));
    path += path === '' ? key : `.${key}`;
  }
  return path;
}
