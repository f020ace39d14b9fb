/**
 * The audit trail's hash chain (issue 17). Every `submission_events` row gets, from a database
 * trigger on insert (prisma/migrations/20261127150000_pades_audit_chain: whatever code inserts
 * it), its place in its submission's chain, the previous event's SHA-256 and its own: the SHA-256
 * of its content and that previous hash (SQL submission_event_hash; docs/signatures.md gives the
 * exact bytes). Changing, removing or inserting an event afterwards breaks the chain from there on;
 * removing the last events is caught by the head the signed audit log printed at completion
 * ("Audit trail: N events, chain head …", read back from the PDF by verify-pdf.ts).
 */
import type { Db } from '../db/client.ts';
import { loadAuditChain } from '../db/queries/audit-chain.ts';

/** What the chain of a submission shows now. */
export interface AuditChainReport {
  submissionId: number;
  /** Every event links to the one before it and its hash matches its content. */
  intact: boolean;
  /** Events in the chain. */
  events: number;
  /** The last event's hash, lower-case hex; null without events. */
  head: string | null;
  /** The head the audit log printed, and whether the chain still has that event with that hash. */
  sealed: { events: number; head: string; inChain: boolean } | null;
  /** Why it is not intact (or the sealed head is missing), one line each. */
  problems: string[];
}

/** The audit log's line naming the chain head: `Audit trail: 7 events, chain head <64 hex digits>`. */
export function chainHeadLine(events: number, head: string): string {
  return `${events} events, chain head ${head}`;
}

/** The events count and head of an audit log's text (chainHeadLine), or null when it has none. */
export function parseChainHead(text: string): { events: number; head: string } | null {
  const match = /(\d+) events, chain head ([0-9a-f]{64})/.exec(text.replace(/\s+/g, ' '));
  return match ? { events: Number(match[1]), head: match[2]! } : null;
}

/** The head of events as loaded with their chain columns: the count and the last one's hash (hex). */
export function headOf(events: readonly { chainSeq: number | null; hash: Uint8Array | null }[]): {
  events: number;
  head: string;
} | null {
  let last: { chainSeq: number | null; hash: Uint8Array | null } | undefined;
  for (const event of events)
    if (event.chainSeq !== null && event.hash && (!last || event.chainSeq > last.chainSeq!)) last = event;
  return last ? { events: last.chainSeq!, head: Buffer.from(last.hash!).toString('hex') } : null;
}

/**
 * Checks a submission's chain: places 1, 2, … without gaps, each previous hash the hash before it,
 * each hash what the row's content gives (recomputed by the database); and, when the audit log
 * printed a head, that the event at that place still has that hash.
 */
export async function verifyAuditChain(
  db: Pick<Db, '$queryRaw'>,
  submissionId: number,
  sealed: { events: number; head: string } | null,
): Promise<AuditChainReport> {
  const rows = await loadAuditChain(db, submissionId);
  const problems: string[] = [];
  let previous: string | null = null;
  rows.forEach((row, index) => {
    const place = index + 1;
    if (row.chainSeq !== place)
      problems.push(`event ${row.id}: place ${row.chainSeq ?? 'none'} where ${place} was due`);
    if (row.prevHash !== previous) problems.push(`event ${row.id}: does not link to the event before it`);
    if (row.hash !== row.recomputed) problems.push(`event ${row.id}: its content no longer matches its hash`);
    previous = row.hash;
  });
  const atSealed = sealed ? rows.find((r) => r.chainSeq === sealed.events) : undefined;
  const inChain = sealed !== null && atSealed?.hash === sealed.head && atSealed.hash === atSealed.recomputed;
  if (sealed && !inChain)
    problems.push(`the audit log's chain head (event ${sealed.events}) is no longer in the chain`);
  return {
    submissionId,
    intact: problems.length === 0,
    events: rows.length,
    head: rows.at(-1)?.hash ?? null,
    sealed: sealed ? { ...sealed, inChain } : null,
    problems,
  };
}
