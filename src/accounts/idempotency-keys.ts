/**
 * Idempotency keys (issue 16; docs/idempotency.md): an account that sends `Idempotency-Key` with a
 * POST or PUT under /api, or a GraphQL mutation over HTTP, may send the same request again safely:
 * the first answer (status and body) is replayed for 24 hours. The rules are Stripe's
 * ("Idempotent requests", docs.stripe.com/api/idempotent_requests) with the statuses of the IETF
 * draft "The Idempotency-Key HTTP Header Field" (draft-ietf-httpapi-idempotency-key-header):
 * - the key is scoped to the account: another account's same key is another key;
 * - the same key with another request (method, path, canonical body; for GraphQL the document,
 *   operation name and variables) → 422 IDEMPOTENCY_KEY_REUSED;
 * - the same key while its first request still runs → 409 IDEMPOTENCY_KEY_IN_USE;
 * - an answer is kept once execution began (the service or the operation ran: its errors and a
 *   500 are kept too), not when the request was refused before (its reading, its variables):
 *   the adapters say which (rest-compat/idempotency.ts, src/graphql/idempotency.ts). Answers
 *   that ask for a retry (429, 503) are not kept either, so that the retry runs;
 * - replays carry `Idempotent-Replayed: true`.
 *
 * The state is in PostgreSQL (table idempotency_keys, src/db/queries/idempotency-keys.ts), so it
 * holds across instances and restarts. A request holds its key with a lock it renews every third
 * of the lock lifetime (IDEMPOTENCY_LOCK_SECONDS, 30 s) while it runs, at most MAX_RENEWED_MS; when
 * its instance dies the renewals stop, and a retry with the same request takes the key over once
 * the lock has passed. Rows live 24 h from their first request; each instance deletes expired rows
 * every hour, in bounded batches (deleteExpired).
 *
 * Nothing here runs for a request without the header: the adapters look at the header first.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/client.ts';
import {
  claimIdempotencyKey,
  deleteExpiredIdempotencyKeys,
  finishIdempotencyKey,
  type IdempotencyClaimRef,
  releaseIdempotencyKey,
  renewIdempotencyKey,
} from '../db/queries/idempotency-keys.ts';
import { AppError } from '../errors.ts';
import { MAX_LENGTH, tooLongMessage } from '../limits.ts';
import { type Clock, systemClock } from '../util/clock.ts';

/** The request header (lower case, as Node and the Fetch API read it). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** The response header of a replayed answer (Stripe's), with the value `true`. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a key and its answer are kept after its first request (Stripe: 24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * Longest a request keeps renewing its lock: a request still running after this (none should:
 * the slowest, a large DOCX rendered, takes under a minute) lets its key go when the lock passes.
 */
const MAX_RENEWED_MS = 15 * 60 * 1000;
/** How often each instance deletes expired keys, and how many per statement and per sweep at most. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;
const SWEEP_BATCH = 1_000;
const SWEEP_MAX_BATCHES = 100;

/** An answer as kept and replayed. */
export interface IdempotentAnswer {
  status: number;
  /** The Content-Type it was sent with. */
  contentType: string | null;
  body: string;
}

/** A claimed key: the request runs, then keeps its answer or gives the key back. Each settles once. */
export interface IdempotencyClaim {
  /** Keeps the answer for replays (a failure is logged: the key then frees when its lock passes). */
  finish(answer: IdempotentAnswer): Promise<void>;
  /** Gives the key back without an answer (the request was refused before it ran); logged on failure. */
  release(): Promise<void>;
}

/** What a request with a key does: run (it holds the key), or answer with the kept answer. */
export type IdempotentStart =
  | { run: IdempotencyClaim; replay?: undefined }
  | { run?: undefined; replay: IdempotentAnswer };

export interface IdempotencyKeys {
  /**
   * Claims `key` for the account's request, or finds its kept answer.
   * @param request.apiKeyId the API key the request came with: part of what makes it the same request,
   *   so that another key of the account (narrower scopes or folders: src/accounts/key-scopes.ts)
   *   reusing the idempotency key is refused as a different request, never given a kept answer
   * @param request.fingerprint requestFingerprint() of what makes the request the same request
   * @throws AppError IDEMPOTENCY_KEY_REUSED (422) when the key was used with another request,
   *   IDEMPOTENCY_KEY_IN_USE (409) while its first request runs; the database's errors
   */
  begin(request: { accountId: number; apiKeyId: number; key: string; fingerprint: string }): Promise<IdempotentStart>;
  /** Deletes the keys expired by now, in bounded batches. @returns how many */
  deleteExpired(): Promise<number>;
  /** Deletes expired keys every hour from now on (the service's start). */
  startSweeping(): void;
  /** Stops the sweeps and every renewal (the service's stop; a request still running then loses its lock). */
  close(): void;
}

export interface IdempotencyKeysOptions {
  db: Db;
  logger: Pick<FastifyBaseLogger, 'warn'>;
  /** Milliseconds a lock lasts without renewal (config.idempotencyLockLifetime). */
  lockLifetimeMs: number;
  /** The clock of the locks and expiries (default: the machine's); tests drive time through it. */
  clock?: Clock;
}

/**
 * The key a request sent, or undefined when it sent none.
 * @param value the header's value (null or undefined: absent)
 * @throws AppError VALIDATION (422) for an empty key or one over MAX_LENGTH.idempotencyKey (255, Stripe's) characters
 */
export function readIdempotencyKey(value: string): string;
export function readIdempotencyKey(value: string | null | undefined): string | undefined;
export function readIdempotencyKey(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (value === '') throw new AppError('VALIDATION', 'Idempotency-Key must not be empty.');
  if (value.length > MAX_LENGTH.idempotencyKey)
    throw new AppError('VALIDATION', tooLongMessage('Idempotency-Key', MAX_LENGTH.idempotencyKey));
  return value;
}

/**
 * Lower-case hex SHA-256 of `parts` written as canonical JSON (canonicalJson): the identity of a
 * request for its key. REST: method, path and body; GraphQL: the document, operation and variables.
 */
export function requestFingerprint(parts: readonly unknown[]): string {
  return createHash('sha256').update(canonicalJson(parts)).digest('hex');
}

/** Text written as it is by canonicalJson (punctuation), as opposed to a value. */
class Written {
  constructor(readonly text: string) {}
}

/**
 * JSON text of a JSON value with every object's keys in code-unit order and no white space, so that
 * two bodies that differ only in key order or spacing are the same request. Keys whose value is
 * undefined are left out, as JSON.stringify does; undefined alone is `null`. Written without
 * recursion: a request body nested a million levels deep does not overflow the stack.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item instanceof Written) out.push(item.text);
    else if (item === null || typeof item !== 'object') out.push(JSON.stringify(item) ?? 'null');
    else if (Array.isArray(item)) {
      stack.push(new Written(']'));
      for (let i = item.length - 1; i >= 0; i -= 1) {
        stack.push(item[i] === undefined ? null : item[i]);
        if (i > 0) stack.push(new Written(','));
      }
      stack.push(new Written('['));
    } else {
      const entries = Object.entries(item as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      stack.push(new Written('}'));
      for (let i = entries.length - 1; i >= 0; i -= 1) {
        const [key, v] = entries[i]!;
        stack.push(v);
        stack.push(new Written(`${JSON.stringify(key)}:`));
        if (i > 0) stack.push(new Written(','));
      }
      stack.push(new Written('{'));
    }
  }
  return out.join('');
}

/** Whether an answer of a request that ran is kept: not one that asks for a retry (429, 503). */
export function isKeptStatus(status: number): boolean {
  return status !== 429 && status !== 503;
}

/** Creates the idempotency keys of a database (one per service; docs in the module comment). */
export function createIdempotencyKeys(options: IdempotencyKeysOptions): IdempotencyKeys {
  const { db, logger, lockLifetimeMs } = options;
  const clock = options.clock ?? systemClock;
  const now = () => clock.now();
  // The renewal timers of the keys this instance holds (close() ends them).
  const renewing = new Set<NodeJS.Timeout>();
  let sweeper: NodeJS.Timeout | undefined;

  const hold = (ref: IdempotencyClaimRef): IdempotencyClaim => {
    const since = Date.now();
    let settled = false;
    const stopRenewing = () => {
      clearInterval(renewals);
      renewing.delete(renewals);
    };
    const renewals = setInterval(() => {
      if (Date.now() - since > MAX_RENEWED_MS) {
        logger.warn(
          { accountId: ref.accountId },
          'idempotency key: request still running, its lock is no longer renewed',
        );
        return stopRenewing();
      }
      renewIdempotencyKey(db, ref, new Date(now().getTime() + lockLifetimeMs)).then(
        (stillHeld) => {
          if (!stillHeld) stopRenewing();
        },
        (error) => logger.warn({ err: error }, 'idempotency key: renewing the lock failed'),
      );
    }, lockLifetimeMs / 3);
    renewals.unref();
    renewing.add(renewals);
    return {
      async finish(answer) {
        if (settled) return;
        settled = true;
        stopRenewing();
        try {
          if (!(await finishIdempotencyKey(db, ref, answer)))
            logger.warn({ accountId: ref.accountId }, 'idempotency key: the lock had passed; the answer is not kept');
        } catch (error) {
          logger.warn({ err: error }, 'idempotency key: keeping the answer failed; the key frees when its lock passes');
        }
      },
      async release() {
        if (settled) return;
        settled = true;
        stopRenewing();
        try {
          await releaseIdempotencyKey(db, ref);
        } catch (error) {
          logger.warn({ err: error }, 'idempotency key: giving the key back failed; it frees when its lock passes');
        }
      },
    };
  };

  const deleteExpired = async () => {
    let deleted = 0;
    for (let batch = 0; batch < SWEEP_MAX_BATCHES; batch += 1) {
      const count = await deleteExpiredIdempotencyKeys(db, now(), SWEEP_BATCH);
      deleted += count;
      if (count < SWEEP_BATCH) break;
    }
    return deleted;
  };

  return {
    async begin({ accountId, apiKeyId, key, fingerprint }) {
      const ref = { accountId, key, lockToken: randomUUID() };
      // The caller's API key is part of the request: another key's request is a different one.
      const requestHash = requestFingerprint([apiKeyId, fingerprint]);
      const at = now();
      const outcome = await claimIdempotencyKey(
        db,
        { ...ref, requestHash },
        {
          now: at,
          lockedUntil: new Date(at.getTime() + lockLifetimeMs),
          expiresAt: new Date(at.getTime() + IDEMPOTENCY_KEY_TTL_MS),
        },
      );
      if (outcome.claimed) return { run: hold(ref) };
      const { row } = outcome;
      if (row.requestHash !== requestHash)
        throw new AppError(
          'IDEMPOTENCY_KEY_REUSED',
          'This Idempotency-Key was already used with a different request (method, path or body); ' +
            'use a new key for a new request.',
        );
      if (row.responseStatus === null)
        throw new AppError(
          'IDEMPOTENCY_KEY_IN_USE',
          'A request with this Idempotency-Key is still in progress; retry once it has finished.',
        );
      return {
        replay: { status: row.responseStatus, contentType: row.responseContentType, body: row.responseBody ?? '' },
      };
    },
    deleteExpired,
    startSweeping() {
      if (sweeper) return;
      sweeper = setInterval(() => {
        deleteExpired().catch((error) => logger.warn({ err: error }, 'idempotency keys: deleting expired keys failed'));
      }, SWEEP_EVERY_MS);
      sweeper.unref();
    },
    close() {
      clearInterval(sweeper);
      sweeper = undefined;
      for (const timer of renewing) clearInterval(timer);
      renewing.clear();
    },
  };
}
