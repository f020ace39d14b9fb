/**
 * A bulk send request (issue 16: many submissions of one template from a CSV or JSON rows), in
 * DocuSeal's snake_case keys: the one definition of the GraphQL `CreateBulkSendInput` (src/graphql/
 * zod-input.ts) and of the REST body of `POST /api/submissions/bulk` (rest-compat/params.ts). Its
 * settings are those of a create request (CreateSubmissionsRequest) and apply to every row; each
 * row gives the submitters (src/submissions/bulk-send-rows.ts maps its cells to them).
 */
import { z } from 'zod';
import { BULK_SEND_RATE_PER_MINUTE, list, MAX_ITEMS, MAX_LENGTH, text } from '../limits.ts';
import { CreateSubmissionsRequest } from './submitter-input.ts';

/**
 * Where one column of the data goes: a role's email, name, phone or external_id, a value of one of
 * its fields (`values.<field name or uuid>`), or a key of its metadata (`metadata.<key>`).
 */
export const BulkSendColumn = z.object({
  column: text(MAX_LENGTH.name).meta({ description: 'The column: its CSV header, or its key in the JSON rows.' }),
  role: text(MAX_LENGTH.name).optional().meta({
    description: 'Template role name (case-insensitive); default: the role of the field, else the first role.',
  }),
  to: text(MAX_LENGTH.name + 'metadata.'.length).meta({
    description: 'email, name, phone, external_id, values.<field name or uuid>, or metadata.<key>.',
  }),
});
export type BulkSendColumn = z.infer<typeof BulkSendColumn>;

/** The settings of a create request that a bulk send applies to each row's submission. */
export const BulkSendSettings = CreateSubmissionsRequest.pick({
  send_email: true,
  send_sms: true,
  order: true,
  completed_redirect_url: true,
  bcc_completed: true,
  reply_to: true,
  message: true,
  expire_at: true,
  name: true,
  variables: true,
  go_to_last: true,
  reminders: true,
  language: true,
});
export type BulkSendSettings = z.infer<typeof BulkSendSettings>;

/**
 * A bulk send request. Exactly one of `csv` (text, its first line the header) and `rows` (objects
 * keyed by column). Sizes (src/limits.ts): at most MAX_BULK_SEND_BYTES of data, MAX_ITEMS.bulkSendRows
 * rows and MAX_ITEMS.bulkSendColumns columns, checked by src/submissions/bulk-send-rows.ts.
 */
export const CreateBulkSendRequest = BulkSendSettings.extend({
  template_id: z.number().int(),
  csv: z
    .string()
    .optional()
    .meta({ description: 'CSV text (RFC 4180, comma-separated, UTF-8): a header line, then one line per submission.' }),
  rows: z.array(z.record(z.string(), z.unknown())).optional().meta({
    description: 'Instead of csv: one object per submission, keyed by column (string, number or boolean values).',
  }),
  columns: list(BulkSendColumn, MAX_ITEMS.bulkSendColumns)
    .optional()
    .meta({
      description:
        'Where each column goes; only these columns are read. Default: by header, as DocuSeal’s sample spreadsheet ' +
        'names them (Email, Name, Phone, external_id, a field name, "<Role> - <Email or field>", metadata.<key>).',
    }),
  rate_per_minute: z
    .number()
    .int()
    .min(BULK_SEND_RATE_PER_MINUTE.min)
    .max(BULK_SEND_RATE_PER_MINUTE.max)
    .optional()
    .meta({ description: 'Invitations (emails and SMS) released per minute; default BULK_SEND_RATE_PER_MINUTE.' }),
});
