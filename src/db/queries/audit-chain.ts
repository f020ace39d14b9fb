/**
 * The audit chain of a submission's events (issue 17): the rows as stored, each with the hash the
 * database computes again now from its columns (SQL submission_event_hash, the function the insert
 * trigger uses: prisma/migrations/20261127150000_pades_audit_chain). src/signing/audit-chain.ts
 * judges them.
 */
import type { Db } from '../client.ts';

/** One event of the chain, as stored, with its hash recomputed. */
export interface ChainRow {
  id: number;
  chainSeq: number | null;
  /** Lower-case hex; null for the first event. */
  prevHash: string | null;
  hash: string | null;
  /** The hash the row's columns give now. */
  recomputed: string;
}

/** Every event of the submission in chain order (then by id, for rows without a place), hashes recomputed. */
export async function loadAuditChain(db: Pick<Db, '$queryRaw'>, submissionId: number): Promise<ChainRow[]> {
  return db.$queryRaw<ChainRow[]>`
    SELECT id, chain_seq AS "chainSeq", encode(prev_hash, 'hex') AS "prevHash", encode(hash, 'hex') AS hash,
           encode(submission_event_hash(chain_seq, prev_hash, id, account_id, submission_id, submitter_id, event_type,
                                        event_timestamp, data, created_at), 'hex') AS recomputed
      FROM submission_events
     WHERE submission_id = ${submissionId}
     ORDER BY chain_seq NULLS LAST, id`;
}
