/**
 * The statements of creating submissions (src/submissions/create-submissions.ts): the template's
 * row (roles and fields sent only when its version changed), the ids drawn for a submission and
 * its submitters, and the one INSERT of a submission with its submitters, events and outbox rows.
 * Plain SQL: creating is the hot path (bench/README.md, issue 4).
 */
import { type Db, sqlPool } from '../client.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { selectOutboxRows } from './outbox.ts';
import { perClient, turnBatch } from '../turn-batch.ts';

/** A template's row as READ_TEMPLATE reads it. */
export interface TemplateRow {
  id: number;
  accountId: number;
  /** Its folder (for API keys limited to folders: src/accounts/key-scopes.ts). */
  folderId: number | null;
  archived: boolean;
  /** The row's version (xmin): any update of the row changes it. */
  version: string;
  /** Null when the version is the one asked about ($2). */
  fields: unknown;
  submitters: unknown;
}

/**
 * The template a submission is made from: its owner, state, roles and fields. $2: the row
 * version whose roles and fields the caller holds already (parsed): those two are then not sent
 * again (see readTemplate). Its documents are copied by INSERT_SUBMISSION itself.
 */
const READ_TEMPLATE = {
  name: 'signet_create_submission_template',
  text: `
    SELECT t.id, t.account_id AS "accountId", t.folder_id AS "folderId", t.archived_at IS NOT NULL AS archived,
           t.xmin::text AS version,
           CASE WHEN t.xmin::text = $2 THEN NULL ELSE t.fields END AS fields,
           CASE WHEN t.xmin::text = $2 THEN NULL ELSE t.submitters END AS submitters
      FROM templates t
     WHERE t.id = $1`,
};

/**
 * The template's row (READ_TEMPLATE), or undefined when there is none.
 * @param knownVersion the row version (xmin) whose roles and fields the caller holds: then they come back null
 */
export async function readTemplateRow(
  db: Db,
  templateId: number,
  knownVersion: string | null,
): Promise<TemplateRow | undefined> {
  const { rows } = await sqlPool(db).query<TemplateRow>({ ...READ_TEMPLATE, values: [templateId, knownVersion] });
  return rows[0];
}

/** The ids of one submission and its submitters, drawn from the tables' sequences. */
export interface SubmissionIds {
  submissionId: number;
  submitterIds: number[];
}

/**
 * $1 submissions, $2 submitters: that many new ids from each table's sequence (the ids INSERT
 * would have taken; an id drawn for a write that then does not happen is skipped, as a rolled
 * back insert's is).
 */
const DRAW_IDS = {
  name: 'signet_create_submission_ids',
  text: `
    SELECT ARRAY(SELECT nextval('submissions_id_seq')::int FROM generate_series(1, $1::int)) AS submissions,
           ARRAY(SELECT nextval('submitters_id_seq')::int FROM generate_series(1, $2::int)) AS submitters`,
};

/** The creates of one turn of the event loop draw their ids in one statement (src/db/turn-batch.ts). */
const idDraws = perClient((db: Db) =>
  turnBatch(async (parties: readonly number[]) => {
    const total = parties.reduce((sum, n) => sum + n, 0);
    const { rows } = await sqlPool(db).query<{ submissions: number[]; submitters: number[] }>({
      ...DRAW_IDS,
      values: [parties.length, total],
    });
    const { submissions, submitters } = rows[0]!;
    let next = 0;
    return parties.map((n, i): SubmissionIds => {
      const submitterIds = submitters.slice(next, next + n);
      next += n;
      return { submissionId: submissions[i]!, submitterIds };
    });
  }),
);

/** Draws the ids of one submission with `parties` submitters (those of one turn in one statement). */
export function drawSubmissionIds(db: Db, parties: number): Promise<SubmissionIds> {
  return idDraws(db).load(parties);
}

/** A row of INSERT_SUBMISSION: one per submitter inserted; JSON as text (jsonb's own), timestamps as ISO text. */
export interface InsertedRow {
  submission_id: number;
  expire_at: string | null;
  submission_created_at: string;
  id: number;
  uuid: string;
  slug: string;
  email: string | null;
  name: string | null;
  phone: string | null;
  external_id: string | null;
  role_uuid: string;
  metadata: string;
  preferences: string;
  language: string | null;
  values: string;
  sent_at: string | null;
  completed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** `timestamp(3)` (UTC) as ISO 8601, as the DateTime scalar writes it: 2026-11-21T15:54:27.000Z. */
const iso = (column: string) => `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Submissions with their submitters, the api_complete_form event of each party created completed,
 * and completed_at when every party is (reference §7.5 `completed`), in one statement (plain SQL:
 * through Prisma these were four statements in a transaction, ~0.3 ms of CPU each). $1 is the JSON
 * of submissionRow() — one submission — or a JSON array of them (a bulk send's batch writes its
 * submissions in one statement); timestamps in it are ISO instants, stored as UTC like Prisma's.
 * Each submission's copy of the documents (template_schema: attachment_uuid, name, file_id, in
 * order) is taken from its template here. With a `templateVersion`, a submission is written only if
 * the template is still that version, the caller's and not archived. Its outbox rows are written
 * only with it. Rows: one per submitter, as stored, in id order (the create answer is made from
 * them); none for a submission not written.
 */
const INSERT_SUBMISSION = {
  name: 'signet_create_submission',
  text: `
    WITH input AS (
      SELECT x.j, x.n
        FROM jsonb_array_elements(CASE jsonb_typeof($1::jsonb) WHEN 'array' THEN $1::jsonb
                                                                ELSE jsonb_build_array($1::jsonb) END)
             WITH ORDINALITY AS x(j, n)
    ),
    submission AS (
      INSERT INTO submissions (id, account_id, template_id, created_by_user_id, slug, name, source, submitters_order,
                               template_submitters, template_fields, template_schema, preferences, variables,
                               language, expire_at, completed_at, created_at, updated_at)
      SELECT (j->>'id')::int, (j->>'accountId')::int, t.id, (j->>'userId')::int,
             j->>'slug', j->>'name', j->>'source', j->>'order',
             j->'roles', j->'fields',
             (SELECT COALESCE(jsonb_agg(jsonb_build_object('attachment_uuid', d.uuid, 'name', d.name,
                                                           'file_id', d.file_id)
                                        ORDER BY d.position), '[]')
                FROM template_documents d WHERE d.template_id = t.id),
             j->'preferences', j->'variables', j->>'language',
             (j->>'expireAt')::timestamptz AT TIME ZONE 'UTC', (j->>'completedAt')::timestamptz AT TIME ZONE 'UTC',
             (j->>'now')::timestamptz AT TIME ZONE 'UTC', (j->>'now')::timestamptz AT TIME ZONE 'UTC'
        FROM input JOIN templates t ON t.id = (j->>'templateId')::int
       -- Planned on the template as last read: only if it is still that version, the caller's, not archived.
       WHERE j->>'templateVersion' IS NULL
          OR (t.xmin::text = j->>'templateVersion' AND t.account_id = (j->>'accountId')::int AND t.archived_at IS NULL)
       ORDER BY input.n
      RETURNING id, expire_at, created_at
    ),
    party AS (
      INSERT INTO submitters (id, account_id, submission_id, role_uuid, slug, email, name, phone, external_id,
                              metadata, language, values, preferences, order_index, sent_at, completed_at, created_at,
                              updated_at)
      SELECT (p->>'id')::int, (i.j->>'accountId')::int, s.id, (p->>'roleUuid')::uuid,
             p->>'slug', p->>'email', p->>'name', p->>'phone', p->>'externalId',
             p->'metadata', p->>'language', p->'values', p->'preferences', (p->>'orderIndex')::int,
             CASE WHEN (p->>'sendNow')::boolean THEN (i.j->>'now')::timestamptz AT TIME ZONE 'UTC' END,
             CASE WHEN (p->>'completed')::boolean THEN (i.j->>'now')::timestamptz AT TIME ZONE 'UTC' END,
             (i.j->>'now')::timestamptz AT TIME ZONE 'UTC', (i.j->>'now')::timestamptz AT TIME ZONE 'UTC'
        FROM input i JOIN submission s ON s.id = (i.j->>'id')::int,
             jsonb_array_elements(i.j->'parties') WITH ORDINALITY AS x(p, n)
       ORDER BY i.n, x.n
      RETURNING *
    ),
    completed_event AS (
      INSERT INTO submission_events (account_id, submission_id, submitter_id, event_type, event_timestamp, created_at)
      SELECT (i.j->>'accountId')::int, p.submission_id, p.id, 'api_complete_form',
             (i.j->>'now')::timestamptz AT TIME ZONE 'UTC', (i.j->>'now')::timestamptz AT TIME ZONE 'UTC'
        FROM party p JOIN input i ON (i.j->>'id')::int = p.submission_id
       WHERE p.completed_at IS NOT NULL
       ORDER BY p.id
    ),
    outbox AS (
      -- What each creation causes (the outbox), written only with its submission.
      INSERT INTO outbox (name, data, unique_key, run_at)
      SELECT * FROM (${selectOutboxRows(
        `(SELECT COALESCE(jsonb_agg(e.o ORDER BY i.n, e.k), '[]'::jsonb)
            FROM input i JOIN submission s ON s.id = (i.j->>'id')::int,
                 jsonb_array_elements(i.j->'outbox') WITH ORDINALITY AS e(o, k))`,
      )}) effect
    )
    SELECT s.id AS submission_id, ${iso('s.expire_at')} AS expire_at, ${iso('s.created_at')} AS submission_created_at,
           p.id, p.uuid::text AS uuid, p.slug, p.email, p.name, p.phone, p.external_id, p.role_uuid::text AS role_uuid,
           p.metadata::text AS metadata, p.preferences::text AS preferences, p.language, p.values::text AS values,
           ${iso('p.sent_at')} AS sent_at, ${iso('p.completed_at')} AS completed_at,
           ${iso('p.created_at')} AS created_at, ${iso('p.updated_at')} AS updated_at
      FROM submission s JOIN party p ON p.submission_id = s.id
     ORDER BY p.id`,
};

/**
 * Runs INSERT_SUBMISSION with `json` (the planned submission's JSON) on the pool.
 * @returns one row per submitter stored; none when nothing was written (the template changed)
 */
export async function insertSubmission(db: Db, json: string): Promise<InsertedRow[]> {
  const { rows } = await sqlPool(db).query<InsertedRow>({ ...INSERT_SUBMISSION, values: [json] });
  return rows;
}

/**
 * INSERT_SUBMISSION inside a transaction (`tx`), for requests that store files with it.
 * @param json one planned submission's JSON, or a JSON array of several (one statement for all)
 */
export function insertSubmissionIn(tx: Prisma.TransactionClient, json: string): Promise<InsertedRow[]> {
  return tx.$queryRawUnsafe<InsertedRow[]>(INSERT_SUBMISSION.text, json);
}
