/**
 * The template.* domain events (reference/docuseal-behaviour.md §6): every template change records
 * them in its own transaction (src/events/events.ts SideEffects), beside its template_events row.
 */
import type { Db } from '../db/client.ts';
import type { DomainEvent, EventType, SideEffects } from '../events/events.ts';

/** What the template changes need: the database and the transaction that records their events. */
export interface TemplateChangeDeps {
  db: Db;
  effects: Pick<SideEffects, 'transaction'>;
}

/** The template.* domain events of one change of a template, at `at` (default now). */
export function templateEvents(
  accountId: number,
  templateId: number,
  types: EventType[],
  at = new Date(),
): DomainEvent[] {
  return types.map((type) => ({ type, accountId, recordId: templateId, at }));
}
