/**
 * Delivering one webhook delivery (one event to one endpoint): the `deliver-webhook` job
 * (reference/docuseal-behaviour.md §9; ../shared/DESIGN.md "webhook retries", "webhook signature").
 *
 * Each job is one attempt, `{deliveryId, attempt}`:
 * 1. nothing is sent for a delivery that is gone (endpoint deleted) or no longer `pending`
 *    (succeeded or given up): never twice after a success;
 * 2. the attempt is claimed (attempt_count k → k+1, in one conditional UPDATE), sent, and recorded
 *    (a webhook_attempts row, unique per (delivery, attempt), and the delivery's new status) in
 *    one statement;
 * 3. on failure (status ≥ 400, timeout, connection error, refused destination) the next attempt
 *    is enqueued as its own persisted job at now + 2^k × WEBHOOK_RETRY_BASE_MS, while that stays
 *    within 48 h × base/60000 of the first send, 12 sends at most; otherwise the delivery is
 *    `failed`. Persisted, so a restart loses no retry; the job's unique key (`<id>:<k>`) makes
 *    re-enqueueing harmless.
 * A job that finds its attempt claimed but not recorded (the process died mid-send) records it as
 * interrupted and sends the next attempt at once (the receiver did not fail; we did): the receiver
 * may get that event twice, never zero times (consumers must be idempotent, as with DocuSeal).
 *
 * Attempts are claimed fairly: at most so many at once per endpoint and per account, over all
 * instances (defineDeliverWebhookJob); one waiting for its place is not run, so it holds no place,
 * and counts as no attempt.
 *
 * The body of the first attempt is the one the dispatch built (passed in the job); later attempts
 * rebuild `data` from the record as it is then (DocuSeal re-serializes on every attempt; file URLs
 * in it are signed and expire), keeping `event_type` and `timestamp`.
 */
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { type ClaimedDelivery, claimAttempt, recordAttemptOutcome } from '../db/queries/webhook-attempts.ts';
import { AppError } from '../errors.ts';
import type { EventType, SideEffects } from '../events/events.ts';
import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../generated/prisma/client.ts';
import type { JobLogger, JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import type { PayloadBuilder, WebhookPayload } from './payloads.ts';
import { sendWebhookRequest, type SendWebhookRequestOptions, type WebhookResponse } from './send-request.ts';
import { SIGNATURE_HEADER, signatureHeader, signingSecrets } from './signature.ts';

export const DELIVER_WEBHOOK_JOB = 'deliver-webhook';

/** `User-Agent` of every webhook request. */
export const WEBHOOK_USER_AGENT = 'Signet-Webhooks/1.0';

/** Sends per delivery at most (DESIGN.md: 12 sends within 48 hours). */
export const MAX_SENDS = 12;

/** Data of a `deliver-webhook` job. */
export interface DeliverWebhookData {
  deliveryId: number;
  /** 0-based number of the attempt this job makes. */
  attempt: number;
  /** The exact body to send (the dispatch's serialisation); absent: rebuilt from the record. */
  body?: string;
  /** A redelivery asked for by the user: sent even if the endpoint no longer subscribes to the event. */
  manual?: boolean;
  /**
   * The delivery's account and endpoint, for the fair claim (defineDeliverWebhookJob: deliveries at
   * once per endpoint and per account); absent on jobs stored before it, which it does not limit.
   */
  accountId?: number;
  endpointId?: number;
}

export interface DeliveryDeps {
  db: Db;
  jobs: JobQueue;
  payloads: PayloadBuilder;
  config: Config['webhooks'];
  logger: JobLogger;
  /** Tests: a resolver for host names (default: the system's). */
  resolve?: SendWebhookRequestOptions['resolve'];
  /**
   * Told each recorded attempt's outcome: `succeeded`, `retrying` (failed, next attempt scheduled) or
   * `failed` (given up); buildApp counts them (src/observability/metrics.ts).
   */
  onAttempt?: (outcome: 'succeeded' | 'retrying' | 'failed') => void;
}

/** Milliseconds to wait after failed attempt `attempt` (0-based): 2^attempt × base. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return 2 ** attempt * baseMs;
}

/** The window the sends of one delivery stay within, in milliseconds: 48 hours × base / 1 minute. */
export function retryWindowMs(baseMs: number): number {
  return (48 * 60 * 60 * 1000 * baseMs) / 60_000;
}

type DeliveryWithEndpoint = WebhookDelivery & { endpoint: WebhookEndpoint };

/**
 * Runs one attempt of a delivery (the job handler). Idempotent per (delivery, attempt); see the
 * module comment. Throws only for infrastructure failures (database), which the job retries.
 */
export async function deliverWebhook(deps: DeliveryDeps, job: DeliverWebhookData): Promise<void> {
  if (await attempt(deps, job, { retry: true })) return;
  // Not claimable: gone, no longer pending, or this attempt was claimed before.
  const delivery = await deps.db.webhookDelivery.findUnique({ where: { id: job.deliveryId } });
  if (delivery?.status !== 'pending') return;
  if (delivery.attemptCount > job.attempt) {
    const settled = await waitWhileInFlight(deps, delivery, job.attempt);
    return settled ? resumeAttempt(deps, settled, job) : undefined;
  }
  deps.logger.warn(
    { deliveryId: delivery.id, attempt: job.attempt, attemptCount: delivery.attemptCount },
    'webhook: attempt ahead of the delivery; ignored',
  );
}

/**
 * Claims, sends and records attempt `job.attempt` of a delivery; with `retry`, schedules the next
 * one after a failure. Returns the response, or null when the attempt was not there to claim
 * (another run had it, or the delivery is gone or no longer pending).
 */
export async function attempt(
  deps: DeliveryDeps,
  job: DeliverWebhookData,
  options: { retry: boolean },
): Promise<WebhookResponse | null> {
  const claimed = await claimAttempt(deps.db, job.deliveryId, job.attempt, job.body === undefined);
  if (!claimed) return null;
  const startedAt = new Date();
  const { response, payload, final } = await send(deps, claimed, job, startedAt);
  await recordAttempt(deps, claimed, {
    attempt: job.attempt,
    startedAt,
    response,
    payload,
    retry: options.retry && !final,
    manual: job.manual,
  });
  return response;
}

/** Sends the delivery's request now; `final` when it must not be retried (endpoint disabled or unsubscribed). */
async function send(
  deps: DeliveryDeps,
  delivery: ClaimedDelivery,
  job: DeliverWebhookData,
  now: Date,
): Promise<{ response: WebhookResponse; payload: WebhookPayload | null; final: boolean }> {
  const { endpoint } = delivery;
  const notSent = (error: string) => ({
    response: { ok: false, statusCode: null, durationMs: 0, error, responseBody: null },
    payload: null,
    final: true,
  });
  if (endpoint.disabledAt) return notSent('Not sent: the endpoint is disabled');
  if (!job.manual && !endpoint.events.includes(delivery.eventType))
    return notSent(`Not sent: the endpoint no longer subscribes to ${delivery.eventType}`);

  let body = job.body;
  let payload: WebhookPayload | null = null;
  if (body === undefined) {
    payload = await rebuildPayload(deps, delivery);
    body = JSON.stringify(payload);
  }
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
  };
  const custom =
    endpoint.headerName && endpoint.headerValue !== null
      ? { name: endpoint.headerName, value: endpoint.headerValue }
      : null;
  // As DocuSeal: a custom header named X-Docuseal-Signature takes the signature's place.
  if (!custom || custom.name.toLowerCase() !== SIGNATURE_HEADER.toLowerCase()) {
    headers[SIGNATURE_HEADER] = signatureHeader(signingSecrets(endpoint, now), timestamp, body);
  }
  if (custom) headers[custom.name] = custom.value;

  const response = await sendWebhookRequest({
    url: endpoint.url,
    headers,
    body,
    connectTimeoutMs: deps.config.connectTimeout,
    responseTimeoutMs: deps.config.responseTimeout,
    policy: { allowPrivate: deps.config.allowPrivate, allowedHosts: deps.config.allowedHosts },
    resolve: deps.resolve,
  });
  // The account sees only "Webhook request failed" (src/webhooks/send-request.ts); the reason is for operators.
  if (response.detail)
    deps.logger.warn(
      { deliveryId: delivery.id, attempt: job.attempt, reason: response.detail },
      'webhook request failed',
    );
  return { response, payload, final: false };
}

/**
 * `data` as the record is now, with the delivery's event_type and timestamp; the stored payload
 * when the record is gone.
 */
async function rebuildPayload(
  deps: DeliveryDeps,
  delivery: Pick<ClaimedDelivery, 'id' | 'accountId' | 'eventType' | 'recordId' | 'payload'>,
): Promise<WebhookPayload> {
  const stored = delivery.payload as WebhookPayload;
  try {
    const fresh = await deps.payloads.build({
      type: delivery.eventType as EventType,
      accountId: delivery.accountId,
      recordId: delivery.recordId,
      at: new Date(stored.timestamp),
    });
    return fresh ?? stored;
  } catch (error) {
    // The attempt goes ahead with what the dispatch built rather than not at all.
    deps.logger.warn(
      { err: error, deliveryId: delivery.id },
      'webhook: could not rebuild the payload; sending the stored one',
    );
    return stored;
  }
}

/**
 * Records attempt `attempt` and the delivery's new state in one statement (nothing when that
 * attempt is recorded already), then (when it failed, may be retried and the window allows)
 * enqueues the next attempt.
 */
async function recordAttempt(
  deps: DeliveryDeps,
  delivery: Pick<ClaimedDelivery, 'id' | 'accountId' | 'endpointId' | 'createdAt' | 'firstSentAt'>,
  outcome: {
    attempt: number;
    startedAt: Date;
    response: WebhookResponse;
    payload: WebhookPayload | null;
    retry: boolean;
    manual?: boolean | undefined;
    retryNow?: boolean;
  },
): Promise<void> {
  const { response, attempt: k } = outcome;
  let status: 'succeeded' | 'failed' | 'pending' = response.ok ? 'succeeded' : 'failed';
  let nextAttemptAt: Date | null = null;
  if (!response.ok && outcome.retry && k + 1 < MAX_SENDS) {
    const firstSentAt = k === 0 ? outcome.startedAt : (delivery.firstSentAt ?? delivery.createdAt);
    // An attempt our own crash interrupted is no failure of the receiver's: the next one goes now.
    const next = new Date(Date.now() + (outcome.retryNow ? 0 : retryDelayMs(k, deps.config.retryBase)));
    if (next.getTime() - firstSentAt.getTime() <= retryWindowMs(deps.config.retryBase)) {
      status = 'pending';
      nextAttemptAt = next;
    }
  }
  const recorded = await recordAttemptOutcome(deps.db, {
    deliveryId: delivery.id,
    attempt: k,
    statusCode: response.statusCode,
    durationMs: response.durationMs,
    error: response.error,
    responseBody: response.responseBody,
    startedAt: outcome.startedAt,
    status,
    nextAttemptAt,
    payload: outcome.payload ? JSON.stringify(outcome.payload) : null,
  });
  // Recorded already by another run of this attempt: its record stands.
  if (!recorded) return;
  deps.onAttempt?.(status === 'pending' ? 'retrying' : status);
  if (status === 'pending' && nextAttemptAt)
    await enqueueAttempt(
      deps.jobs,
      {
        deliveryId: delivery.id,
        attempt: k + 1,
        ...(outcome.manual ? { manual: true } : {}),
        accountId: delivery.accountId,
        endpointId: delivery.endpointId,
      },
      nextAttemptAt,
    );
}

/** A job found its attempt already claimed: finish what the earlier run could not. */
/**
 * A claim younger than the longest an attempt can take (connect + response timeouts, + 5 s) may
 * be another run's that is still sending: two runs of one job overlap only when a lock lapsed, and
 * calling that attempt interrupted would record a failure over its success (and send it again).
 * Waits until it is recorded or old enough to be a dead run's.
 * @returns the delivery to resume, or null when it is gone or no longer pending (the other run recorded it)
 */
async function waitWhileInFlight(
  deps: DeliveryDeps,
  delivery: WebhookDelivery,
  attempt: number,
): Promise<WebhookDelivery | null> {
  const windowMs = deps.config.connectTimeout + deps.config.responseTimeout + 5_000;
  let current = delivery;
  for (;;) {
    if (Date.now() - current.updatedAt.getTime() >= windowMs) return current;
    const recorded = await deps.db.webhookAttempt.findUnique({
      where: { deliveryId_attempt: { deliveryId: current.id, attempt } },
      select: { id: true },
    });
    if (!recorded) await new Promise((resolve) => setTimeout(resolve, 100));
    const next = await deps.db.webhookDelivery.findUnique({ where: { id: current.id } });
    if (next?.status !== 'pending') return null;
    if (recorded) return next;
    current = next;
  }
}

async function resumeAttempt(deps: DeliveryDeps, delivery: WebhookDelivery, job: DeliverWebhookData): Promise<void> {
  const attempts: Pick<WebhookAttempt, 'attempt' | 'createdAt'>[] = await deps.db.webhookAttempt.findMany({
    where: { deliveryId: delivery.id, attempt: { in: [0, job.attempt] } },
    select: { attempt: true, createdAt: true },
  });
  if (!attempts.some((a) => a.attempt === job.attempt)) {
    deps.logger.warn(
      { deliveryId: delivery.id, attempt: job.attempt },
      'webhook: attempt interrupted (claimed, never recorded); recording it as failed',
    );
    const response: WebhookResponse = {
      ok: false,
      statusCode: null,
      durationMs: 0,
      error: 'Interrupted: the service stopped during this attempt (the receiver may have received it)',
      responseBody: null,
    };
    const firstSentAt = attempts.find((a) => a.attempt === 0)?.createdAt ?? null;
    await recordAttempt(
      deps,
      {
        id: delivery.id,
        accountId: delivery.accountId,
        endpointId: delivery.endpointId,
        createdAt: delivery.createdAt,
        firstSentAt,
      },
      {
        attempt: job.attempt,
        startedAt: new Date(),
        response,
        payload: null,
        retry: true,
        retryNow: true,
        manual: job.manual,
      },
    );
    return;
  }
  // Recorded, but the next attempt may not have been enqueued: enqueueing again is harmless.
  if (delivery.status === 'pending' && delivery.nextAttemptAt && delivery.attemptCount === job.attempt + 1) {
    await enqueueAttempt(
      deps.jobs,
      {
        deliveryId: delivery.id,
        attempt: job.attempt + 1,
        ...(job.manual ? { manual: true } : {}),
        accountId: delivery.accountId,
        endpointId: delivery.endpointId,
      },
      delivery.nextAttemptAt,
    );
  }
}

/** The job of one attempt (unique per delivery and attempt), due at `at` (default now). */
export function attemptJob(data: DeliverWebhookData, at?: Date): OutboxJob {
  return { name: DELIVER_WEBHOOK_JOB, data, uniqueKey: `${data.deliveryId}:${data.attempt}`, ...(at ? { at } : {}) };
}

/** Enqueues one attempt from a running job (the dispatch, an earlier attempt): attemptJob, straight into the store. */
export function enqueueAttempt(jobs: JobQueue, data: DeliverWebhookData, at?: Date): Promise<string> {
  const job = attemptJob(data, at);
  return jobs.enqueue<DeliverWebhookData>(job.name, data, { uniqueKey: job.uniqueKey!, ...(at ? { at } : {}) });
}

/**
 * Sends a delivery again now, as a new delivery of the same event to the same endpoint (the
 * original keeps its history): its `data` is rebuilt from the record as it is now, `timestamp` is
 * the event's, and it has its own retry schedule. Sent even when the endpoint no longer subscribes
 * to the event (DocuSeal's manual resend always sends).
 * @returns the new delivery (pending; the send runs as a job right away)
 * @throws AppError NOT_FOUND / FORBIDDEN for an unknown or another account's delivery; VALIDATION
 *   when the endpoint is disabled
 */
export async function redeliverWebhook(
  deps: { db: Db; effects: Pick<SideEffects, 'transaction'> },
  options: { deliveryId: number; accountId: number },
): Promise<WebhookDelivery> {
  const original = await findDeliveryForAccount(deps.db, { id: options.deliveryId, accountId: options.accountId });
  if (original.endpoint.disabledAt)
    throw new AppError('VALIDATION', `Webhook endpoint ${original.endpointId} is disabled; enable it to redeliver`);
  // The copy and its first attempt's job in one transaction (the outbox): a crash loses neither.
  return deps.effects.transaction(async (tx, effects) => {
    const copy = await tx.webhookDelivery.create({
      data: {
        accountId: original.accountId,
        endpointId: original.endpointId,
        eventType: original.eventType,
        recordType: original.recordType,
        recordId: original.recordId,
        payload: original.payload as never,
      },
    });
    effects.jobs.push(
      attemptJob({
        deliveryId: copy.id,
        attempt: 0,
        manual: true,
        accountId: copy.accountId,
        endpointId: copy.endpointId,
      }),
    );
    return copy;
  });
}

/**
 * A delivery of the account, with its endpoint.
 * @throws AppError NOT_FOUND ("Webhook delivery <id> not found") or FORBIDDEN
 */
export async function findDeliveryForAccount(
  db: Db,
  options: { id: number; accountId: number },
): Promise<DeliveryWithEndpoint> {
  const delivery = await db.webhookDelivery.findUnique({ where: { id: options.id }, include: { endpoint: true } });
  if (!delivery) throw new AppError('NOT_FOUND', `Webhook delivery ${options.id} not found`);
  if (delivery.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  return delivery;
}

/**
 * Registers the `deliver-webhook` job. Database failures inside a run are retried by the queue.
 *
 * Fair delivery (issue 23; docs/security.md "Fair delivery and atomic caps"): an instance sends
 * `concurrency.instance` deliveries at once (WEBHOOK_CONCURRENCY, 60), and the claim of the next
 * ones (the job queue's `concurrencyPer`, src/db/queries/jobs.ts lockDueJobsFairly) passes over the
 * deliveries of an endpoint with `concurrency.endpoint` (8) in progress, then of an account with
 * `concurrency.account` (30) in progress, counted on every instance together. An account whose
 * receivers are slow waits for its own places; it never holds an instance's last ones, and another
 * account's delivery is claimed as soon as it is due. Skipped deliveries stay due in the store:
 * they hold nothing, and count as no failed attempt.
 *
 * Why the account's and the endpoint's limits are over all instances, and the instance's its own:
 * an instance's places are its own (its sockets, its event loop), and the account's limit below the
 * instance's keeps the difference free for the others on each instance whatever the others do; a
 * receiver sees every instance's requests together, so an endpoint's limit is what reaches it.
 * Why 30 and 8: an account alone (bench:webhooks) then delivers as many per second as it did
 * with all 20 of an instance's places before; at 20 and 5 it lost a fifth (bench/README.md).
 */
export function defineDeliverWebhookJob(deps: DeliveryDeps): void {
  const { concurrency } = deps.config;
  deps.jobs.define<DeliverWebhookData>(DELIVER_WEBHOOK_JOB, (data) => deliverWebhook(deps, data), {
    concurrency: concurrency.instance,
    concurrencyPer: [
      { key: 'endpointId', max: concurrency.endpoint },
      { key: 'accountId', max: concurrency.account },
    ],
    retry: { maxAttempts: 5, delayMs: (attempt) => 2 ** attempt * 1000 },
  });
}
