/**
 * What time it is, for the rules that wait for time to pass (reminders: src/submissions/reminders.ts).
 * A dependency handed to the parts that read it (buildApp's `clock` option), so that a test moves
 * time by passing its own clock instead of waiting hours; the service passes systemClock.
 */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The machine's clock. */
export const systemClock: Clock = { now: () => new Date() };
