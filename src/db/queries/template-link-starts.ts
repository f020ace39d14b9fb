/**
 * The counters of templates' shared-link starts (table template_link_starts): new submissions
 * started through `/d/{slug}` without a key, per hour and per key ("ip:<address>",
 * "template:<id>"), for the limits of src/signing-form/start-template-form.ts.
 *
 * Each count is one statement: `INSERT … ON CONFLICT DO UPDATE SET count = count + 1 RETURNING`
 * takes the row lock, so concurrent starts (on any instance) each get a distinct count and a
 * burst cannot slip under a limit the way a count-then-create would. The same statement deletes
 * the rows of hours before the previous one (at most a few per call), so the table holds about
 * two hours of keys.
 */
import type { Db } from '../client.ts';

/**
 * Counts one start under each key in the hour of `now` (UTC, `date_trunc('hour')`).
 * @param keys the keys to count, e.g. `["ip:203.0.113.5", "template:12"]`
 * @returns each key's count in this hour, this start included
 */
export async function countTemplateLinkStart(db: Db, keys: string[], now: Date): Promise<Map<string, number>> {
  const rows = await db.$queryRaw<{ key: string; count: number }[]>`
    WITH hour AS (SELECT date_trunc('hour', ${now}::timestamp) AS start),
    expired AS (
      DELETE FROM template_link_starts WHERE window_start < (SELECT start FROM hour) - interval '1 hour'
    )
    INSERT INTO template_link_starts (key, window_start, count)
    SELECT k, (SELECT start FROM hour), 1 FROM unnest(${keys}::text[]) AS k
    ON CONFLICT (key, window_start) DO UPDATE SET count = template_link_starts.count + 1
    RETURNING key, count`;
  return new Map(rows.map((r) => [r.key, Number(r.count)]));
}
