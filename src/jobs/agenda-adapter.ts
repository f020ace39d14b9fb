/**
 * Every place where Signet relies on Agenda (agenda 6, @agendajs/postgres-backend 3) beyond its
 * public, typed API, in one file: an upgrade of either package that changes one of these breaks
 * test/agenda-contract.test.ts, which runs each assumption against the installed packages and a
 * real PostgreSQL. Everything else in src/jobs/ uses Agenda's public API only (the AgendaBackend,
 * JobRepository and NotificationChannel interfaces, PostgresBackend's and PostgresJobRepository's
 * constructors and public methods).
 *
 * The assumptions:
 * 1. `rowToJob` (private in PostgresJobRepository's type, a method of the class): Agenda's own
 *    mapping of a `jobs` row to JobParameters, used on the rows the store locks itself.
 * 2. `jobProcessor.runningJobs` (not exposed; Agenda forgets the processor on stop()): the Job
 *    objects running in this process.
 * 3. The NOTIFY payload of a new job (PostgresNotificationChannel's serializeNotification) and
 *    the LISTEN channel named by PostgresBackend's `channelName`: the store announces the jobs it
 *    inserts itself with it.
 * 4. Job state saves: Agenda saves a job's state at the start of a run with `lockedAt` set, and
 *    at its end with `lockedAt` cleared (the store skips the first, src/jobs/job-store.ts).
 * 5. The columns the store writes directly (src/db/queries/jobs.ts JOBS_COLUMNS_WRITTEN) exist in
 *    the table the backend creates.
 * 6. The channel emits `stateChange` 'connected' or 'reconnecting' when a reconnection attempt of
 *    its own starts or completes (closableChannel).
 */
import type { Agenda, Job, JobParameters, JobRepository, NotificationChannel, NotificationChannelState } from 'agenda';

/** Agenda's LISTEN channel for new jobs (also the backend's default), given to PostgresBackend. */
export const JOBS_CHANNEL = 'agenda:jobs';

/**
 * Agenda's own mapping of a row of its PostgreSQL table (`SELECT *` / `RETURNING *`) to
 * JobParameters (assumption 1).
 * @throws TypeError when the repository has no such method (a new backend version)
 */
export function rowToJobParameters(repository: JobRepository, row: unknown): JobParameters {
  return (repository as unknown as { rowToJob(row: unknown): JobParameters }).rowToJob(row);
}

/**
 * The jobs running in this process (assumption 2). Agenda keeps them in its job processor, which
 * it does not expose and forgets on stop(): call this before stopping; the function it returns
 * reads the processor's list as it is then.
 */
export function runningJobsOf(agenda: Agenda): () => Job[] {
  const processor = (agenda as unknown as { jobProcessor?: { runningJobs?: Job[] } }).jobProcessor;
  return () => processor?.runningJobs ?? [];
}

/**
 * The NOTIFY payload announcing a new job on JOBS_CHANNEL, as PostgresNotificationChannel's
 * publish() serialises it (assumption 3): `{jobId, jobName, nextRunAt, priority, timestamp,
 * source}`, times as ISO 8601. src/db/queries/outbox.ts builds the same object in SQL.
 */
export function newJobNotification(job: {
  id: string;
  name: string;
  nextRunAt: string;
  timestamp: string;
  source: string;
}): string {
  return JSON.stringify({
    jobId: job.id,
    jobName: job.name,
    nextRunAt: job.nextRunAt,
    priority: 0,
    timestamp: job.timestamp,
    source: job.source,
  });
}

/**
 * Makes the LISTEN channel closable for good (assumption 6). After a lost connection it
 * reconnects by itself (every 100 ms while the database is away, each attempt waiting up to the
 * pool's connection timeout); an attempt still under way when Agenda disconnects the channel at
 * stop() would complete afterwards and hold its connection forever, and the pool's end() would
 * wait for it forever: a stop() shortly after an outage never finished
 * (test/database-outage.test.ts). Once close() is called, an attempt that completes lets its
 * connection go, and one that is scheduled is cancelled.
 */
export function closableChannel(channel: NotificationChannel): { close(): Promise<void> } {
  let closed = false;
  channel.on('stateChange', (state) => {
    if (!closed) return;
    // 'reconnecting' is emitted just before the attempt's timer is set: cancel it after that.
    if (state === 'reconnecting') setImmediate(() => void channel.disconnect().catch(() => undefined));
    else if (state === 'connected') void channel.disconnect().catch(() => undefined);
  });
  return {
    async close() {
      closed = true;
      await channel.disconnect();
    },
  };
}

/** Milliseconds between the first notification of a burst and the fill it starts. */
const FILL_DELAY_MS = 2;

type Notification = Parameters<Parameters<NotificationChannel['subscribe']>[0]>[0];

/**
 * Agenda's notification channel with fewer statements and fills, through the public
 * NotificationChannel interface only:
 * - no job state notifications (a NOTIFY per start, success and completion of every job): they
 *   re-emit Agenda's job events in other instances, and Signet listens to none; the interface
 *   makes publishState and subscribeState optional, and Agenda sends none without them;
 * - new-job notifications of one name are coalesced: a fill starts FILL_DELAY_MS after the first
 *   one, and while Agenda fills its queue for a name, those arriving for it wait and one fill
 *   follows (with the earliest run time among them), instead of one fill each, all racing for
 *   the same rows.
 * `refill(name)` asks for a fill of `name` as a notification would (coalesced with them); it does
 * nothing before Agenda subscribes. `onNew(name)` is told of each new-job notification as it arrives
 * (not of refills).
 */
export function quietChannel(
  inner: NotificationChannel,
  onNew?: (name: string) => void,
): { channel: NotificationChannel; refill(name: string, now?: boolean): void } {
  const channel = new QuietChannel(inner, onNew);
  return { channel, refill: (name, now) => channel.refill(name, now) };
}

class QuietChannel implements NotificationChannel {
  readonly #inner: NotificationChannel;
  /** Agenda's subscription, coalesced; refill() goes through it too. */
  #subscribed: ((notification: Notification, now?: boolean) => Promise<void>) | undefined;

  readonly #onNew: ((name: string) => void) | undefined;

  constructor(inner: NotificationChannel, onNew?: (name: string) => void) {
    this.#inner = inner;
    this.#onNew = onNew;
  }

  get state() {
    return this.#inner.state;
  }

  connect(): Promise<void> {
    return this.#inner.connect();
  }

  disconnect(): Promise<void> {
    return this.#inner.disconnect();
  }

  publish(notification: Notification): Promise<void> {
    return this.#inner.publish(notification);
  }

  on(event: 'stateChange', listener: (state: NotificationChannelState) => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  on(event: 'stateChange' | 'error', listener: (value: never) => void): this {
    this.#inner.on(event as 'error', listener as (error: Error) => void);
    return this;
  }

  off(event: 'stateChange', listener: (state: NotificationChannelState) => void): this;
  off(event: 'error', listener: (error: Error) => void): this;
  off(event: 'stateChange' | 'error', listener: (value: never) => void): this {
    this.#inner.off(event as 'error', listener as (error: Error) => void);
    return this;
  }

  subscribe(handler: (notification: Notification) => Promise<void> | void): () => void {
    const waiting = new Map<string, Notification | null>();
    const coalesced = async (notification: Notification, now = false) => {
      const name = notification.jobName;
      if (waiting.has(name)) {
        const queued = waiting.get(name);
        const earlier = (n: Notification | null | undefined) =>
          n?.nextRunAt ? new Date(n.nextRunAt).getTime() : Number.NEGATIVE_INFINITY;
        if (!queued || earlier(notification) < earlier(queued)) waiting.set(name, notification);
        return;
      }
      waiting.set(name, notification);
      try {
        // A short wait first, so that jobs enqueued in a burst are locked by one statement.
        if (!now) await new Promise((resolve) => setTimeout(resolve, FILL_DELAY_MS));
        for (let next = waiting.get(name); next; next = waiting.get(name)) {
          waiting.set(name, null);
          await handler(next);
        }
      } finally {
        waiting.delete(name);
      }
    };
    this.#subscribed = coalesced;
    const unsubscribe = this.#inner.subscribe((notification) => {
      this.#onNew?.(notification.jobName);
      return coalesced(notification);
    });
    return () => {
      if (this.#subscribed === coalesced) this.#subscribed = undefined;
      unsubscribe();
    };
  }

  /** A fill of `name`, coalesced with the others; `now`: without FILL_DELAY_MS (jobs held already). */
  refill(name: string, now = false): void {
    void this.#subscribed?.(
      { jobId: '' as never, jobName: name, nextRunAt: null, priority: 0, timestamp: new Date() },
      now,
    ).catch(() => undefined);
  }
}
