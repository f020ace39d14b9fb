/**
 * Save-as-you-go: values entered are collected and sent with saveSigningFormValues after a pause
 * in typing (or at once for a click, a choice or an upload), one request at a time, so a reload
 * resumes where the signer left off.
 */
import { saveSigningFormValues, type ApiError } from './api.ts';
import type { FieldValues, SigningForm } from './types.ts';

/** Pause after the last keystroke before saving, in milliseconds. */
const TYPING_PAUSE_MS = 700;

export interface SaveQueueOptions {
  slug: string;
  onSaved(form: SigningForm): void;
  onError(error: ApiError, values: FieldValues): void;
  /** Called when a save starts and when all saves have finished. */
  onBusy?(busy: boolean): void;
}

export class SaveQueue {
  private pending: FieldValues = {};
  private timer: number | undefined;
  private running: Promise<void> = Promise.resolve();
  private inFlight = 0;

  constructor(private readonly options: SaveQueueOptions) {}

  /** Queues a value; saved after a typing pause, or at once with `immediate`. */
  set(uuid: string, value: unknown, immediate = false): void {
    this.pending[uuid] = value;
    window.clearTimeout(this.timer);
    if (immediate) void this.flush();
    else this.timer = window.setTimeout(() => void this.flush(), TYPING_PAUSE_MS);
  }

  /** Whether values wait to be saved. */
  get dirty(): boolean {
    return Object.keys(this.pending).length > 0 || this.inFlight > 0;
  }

  /** Sends what is queued (after any save in flight); resolves when everything so far is saved or failed. */
  flush(init: { keepalive?: boolean } = {}): Promise<void> {
    window.clearTimeout(this.timer);
    const values = this.pending;
    this.pending = {};
    if (Object.keys(values).length === 0) return this.running;
    this.inFlight += 1;
    this.options.onBusy?.(true);
    this.running = this.running.then(async () => {
      try {
        this.options.onSaved(await saveSigningFormValues(this.options.slug, values, init));
      } catch (error) {
        this.options.onError(error as ApiError, values);
      } finally {
        this.inFlight -= 1;
        if (this.inFlight === 0) this.options.onBusy?.(false);
      }
    });
    return this.running;
  }

  /** Puts values back that could not be sent (newer values for the same fields win); sent with the next save. */
  requeue(values: FieldValues): void {
    this.pending = { ...values, ...this.pending };
  }

  /** Drops what is queued (the caller sends it another way) and waits for saves in flight. */
  async drain(): Promise<void> {
    window.clearTimeout(this.timer);
    this.pending = {};
    await this.running;
  }
}
