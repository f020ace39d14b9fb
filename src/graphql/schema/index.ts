/**
 * The GraphQL schema: imports every type file, then builds. The printed form is committed as
 * schema.graphql (scripts/print-schema.ts; test/graphql-schema.test.ts fails when it is stale).
 */
import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from '../builder.ts';
import './account.ts';
import './api-key.ts';
import './reminders.ts';
import './event-feed.ts';
import './submission.ts';
import './bulk-send.ts';
import './signing-form.ts';
import './submission-queries.ts';
import './submission-completion.ts';
import './subscriptions.ts';
import './template.ts';
import './template-mutations.ts';
import './template-form.ts';
import './one-off-submissions.ts';
import './signing-certificate.ts';
import './tools.ts';
import './viewer.ts';
import './webhooks.ts';

export const schema = builder.toSchema();

/** The schema in SDL, sorted, as committed in schema.graphql. */
export function printedSchema(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
