/**
 * The ids of a page of an account's submissions, by one SQL statement (the `submissions` query's
 * filters: interface spec "Submissions" list, reference/docuseal-behaviour.md §4–5). Plain SQL
 * rather than a Prisma `findMany`: Prisma's client spent ~0.8 ms of CPU per call building and
 * mapping this one-column query, ~half of what a GET /api/submissions page costs the service
 * (bench/README.md, issue 4); pg takes ~0.15 ms.
 */
import { createHash } from 'node:crypto';
import { sqlPool, type Db } from '../client.ts';

export interface SubmissionPageFilter {
  accountId: number;
  templateId?: number;
  slug?: string;
  /** Substring of a submitter's name or email (case-insensitive) or phone. */
  q?: string;
  /** true: archived only; false: active only; undefined: both. */
  archived?: boolean;
  /** Only templates in these folders (already resolved from a folder path). */
  folderIds?: number[];
  /**
   * The facts a submission must have (true) or lack (false): a `status=` filter's rule, which the
   * caller takes from src/submissions/status.ts SUBMISSION_STATUS_FILTERS (the rules live there; this
   * module only knows each fact's SQL).
   */
  facts?: SubmissionFacts;
  /** Cursors: ids greater than `after`, smaller than `before`. */
  after?: number;
  before?: number;
  /** Page size (1–100). */
  limit: number;
  /** The time `expired` / `pending` are judged at. */
  now: Date;
}

/** `%`, `_` and `\` of a LIKE pattern taken literally (PostgreSQL's default escape character). */
export const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const named = new Map<string, string>();
/** A prepared-statement name per distinct text (at most 2^filters of them). */
function statementName(text: string): string {
  let name = named.get(text);
  if (!name) {
    name = `submission_page_${createHash('sha1').update(text).digest('hex').slice(0, 12)}`;
    named.set(text, name);
  }
  return name;
}

/**
 * The facts a submission's status is made of (src/submissions/status.ts SUBMISSION_FACTS defines
 * each as a predicate; the names are these).
 */
export type SubmissionFact = 'completed' | 'declined' | 'expired';
/** Facts a submission must have (true) or lack (false); facts not named are ignored. */
export type SubmissionFacts = Readonly<Partial<Record<SubmissionFact, boolean>>>;

/**
 * Each fact of src/submissions/status.ts SUBMISSION_FACTS in SQL over `s` (a submissions row),
 * held (true) and not held (false); `now()` gives the placeholder of the time judged at
 * (timestamp, UTC). The two forms are written out: NOT over a NULL expire_at would be NULL, not true.
 */
const FACT_SQL: Readonly<Record<SubmissionFact, (now: () => string) => Record<'true' | 'false', string>>> = {
  completed: () => ({ true: 's.completed_at IS NOT NULL', false: 's.completed_at IS NULL' }),
  declined: () => {
    const any = 'EXISTS (SELECT 1 FROM submitters d WHERE d.submission_id = s.id AND d.declined_at IS NOT NULL)';
    return { true: any, false: `NOT ${any}` };
  },
  expired: (now) => ({
    true: `s.expire_at <= ${now()}::timestamp`,
    false: `(s.expire_at IS NULL OR s.expire_at > ${now()}::timestamp)`,
  }),
};

/**
 * The SQL condition of a set of facts (a `status=` filter's rule, SUBMISSION_STATUS_FILTERS, which
 * says what each filter means and why), fact by fact; test/submission-status.test.ts checks it
 * selects what matchesStatusFilter selects.
 * @param now gives the placeholder holding the time judged at ("$4"), called only if a fact reads it
 */
export function factsSql(facts: SubmissionFacts, now: () => string): string {
  return Object.entries(facts)
    .map(([fact, held]) => FACT_SQL[fact as SubmissionFact](now)[held ? 'true' : 'false'])
    .join(' AND ');
}

/**
 * @returns the ids ascending, at most `limit`; the conditions are those of the Prisma `where`
 * this replaced (submitters `some`, template `folderId in`, status as src/submissions/status.ts).
 */
export async function submissionPageIds(db: Db, filter: SubmissionPageFilter): Promise<number[]> {
  const values: unknown[] = [filter.accountId];
  const param = (value: unknown) => `$${values.push(value)}`;
  const where = ['s.account_id = $1'];
  if (filter.templateId !== undefined) where.push(`s.template_id = ${param(filter.templateId)}`);
  if (filter.slug !== undefined) where.push(`s.slug = ${param(filter.slug)}`);
  if (filter.q) {
    const pattern = param(`%${likeLiteral(filter.q)}%`);
    where.push(
      `EXISTS (SELECT 1 FROM submitters x WHERE x.submission_id = s.id AND ` +
        `(x.name ILIKE ${pattern} OR x.email ILIKE ${pattern} OR x.phone LIKE ${pattern}))`,
    );
  }
  if (filter.archived !== undefined)
    where.push(filter.archived ? 's.archived_at IS NOT NULL' : 's.archived_at IS NULL');
  if (filter.folderIds !== undefined)
    where.push(
      `s.template_id IN (SELECT t.id FROM templates t WHERE t.folder_id = ANY(${param(filter.folderIds)}::int[]))`,
    );
  if (filter.facts && Object.keys(filter.facts).length > 0) {
    // A placeholder for now only when the filter reads it (an unused one has no type).
    let now: string | undefined;
    const nowParam = () => (now ??= param(filter.now.toISOString().replace('T', ' ').replace('Z', '')));
    where.push(factsSql(filter.facts, nowParam));
  }
  if (filter.after !== undefined) where.push(`s.id > ${param(filter.after)}`);
  if (filter.before !== undefined) where.push(`s.id < ${param(filter.before)}`);
  const text = `SELECT s.id FROM submissions s WHERE ${where.join(' AND ')} ORDER BY s.id LIMIT ${param(filter.limit)}`;
  const { rows } = await sqlPool(db).query<{ id: number }>({ name: statementName(text), text, values });
  return rows.map((row) => row.id);
}
