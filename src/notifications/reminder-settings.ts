/**
 * Reminder settings: when a party who was sent a signature request and has not completed is
 * reminded, how often, how many times, and by which channels. One definition, `ReminderSettings`
 * (DocuSeal-style snake_case keys), read by every place that takes them: a create request's and
 * PUT /submissions/{id}'s `reminders` (src/submissions/submitter-input.ts,
 * update-submission-input.ts), the account's default (src/accounts/account-preferences.ts), and
 * the GraphQL inputs derived from those.
 *
 * The model is DocuSeal Pro's "submitter reminders" (app/views/notifications_settings/
 * _reminder_form.html.erb: a first, second and third reminder, each after a chosen duration from
 * 1 hour to 30 days, account-wide) and Documenso's document reminders (a first reminder after a
 * delay, then repeated at an interval): first after N hours, then every M hours, at most K times.
 * DocuSeal's API has no reminder keys; these are a Signet extension (docs/reminders.md).
 *
 * This module holds the settings and the timing rule (reminderDueAt); who is reminded, and the
 * jobs that do it, are src/submissions/reminders.ts.
 */
import { z } from 'zod';
import { AppError } from '../errors.ts';
import { MAX_REMINDER } from '../limits.ts';

const hours = () =>
  z
    .number()
    .int()
    .min(1, 'must be at least 1')
    .max(MAX_REMINDER.hours, `must be at most ${MAX_REMINDER.hours} (a year)`);

/** The settings as a request gives them (GraphQL `ReminderSettingsInput`, REST `reminders`). */
export const ReminderSettings = z
  .object({
    first_after_hours: hours()
      .optional()
      .meta({ description: 'Hours from the request to the first reminder (needed unless the count is 0).' }),
    every_hours: hours()
      .optional()
      .meta({ description: 'Hours from one reminder to the next (needed when the count is over 1).' }),
    max_count: z
      .number()
      .int()
      .min(0, 'must be at least 0')
      .max(MAX_REMINDER.count, `must be at most ${MAX_REMINDER.count}`)
      .optional()
      .meta({ description: `Reminders per party and address, at most ${MAX_REMINDER.count}; 0: none. Required.` }),
    send_email: z.boolean().optional().meta({ description: 'Remind by email, parties with an email (default true).' }),
    send_sms: z.boolean().optional().meta({ description: 'Remind by SMS, parties with a phone (default false).' }),
  })
  .meta({
    description:
      'Reminders to parties who were sent a request and have not completed: the first `firstAfterHours` after ' +
      'the request, then every `everyHours`, at most `maxCount` times (docs/reminders.md).',
  });

/** The settings as they are stored (a submission's or account's `preferences.reminders`), defaults filled in. */
export interface Reminders {
  first_after_hours?: number;
  every_hours?: number;
  max_count: number;
  send_email: boolean;
  send_sms: boolean;
}

/**
 * Settings that make sense, with their defaults (send_email true, send_sms false): the rules
 * across keys that the schema alone does not state.
 * @param settings parsed with ReminderSettings
 * @param path where they are in the request, for messages (`reminders`)
 * @throws AppError VALIDATION "max_count is required in `reminders`." (checked here rather than by the
 *   schema, so that REST and GraphQL both give this message), "first_after_hours is required when
 *   max_count is over 0 in `reminders`.",
 *   "every_hours is required when max_count is over 1 in `reminders`.", "send_email or send_sms must be
 *   true when max_count is over 0 in `reminders`."
 */
export function checkReminderSettings(settings: z.output<typeof ReminderSettings>, path = 'reminders'): Reminders {
  if (settings.max_count === undefined) throw new AppError('VALIDATION', `max_count is required in \`${path}\`.`);
  const reminders: Reminders = {
    ...(settings.first_after_hours !== undefined ? { first_after_hours: settings.first_after_hours } : {}),
    ...(settings.every_hours !== undefined ? { every_hours: settings.every_hours } : {}),
    max_count: settings.max_count,
    send_email: settings.send_email ?? true,
    send_sms: settings.send_sms ?? false,
  };
  if (reminders.max_count > 0 && reminders.first_after_hours === undefined)
    throw new AppError('VALIDATION', `first_after_hours is required when max_count is over 0 in \`${path}\`.`);
  if (reminders.max_count > 1 && reminders.every_hours === undefined)
    throw new AppError('VALIDATION', `every_hours is required when max_count is over 1 in \`${path}\`.`);
  if (reminders.max_count > 0 && !reminders.send_email && !reminders.send_sms)
    throw new AppError('VALIDATION', `send_email or send_sms must be true when max_count is over 0 in \`${path}\`.`);
  return reminders;
}

/**
 * Stored settings (JSON) read back; anything that does not parse or make sense reads as none.
 * @returns the settings, or null when there are none
 */
export function readReminders(stored: unknown): Reminders | null {
  if (stored === null || stored === undefined) return null;
  const parsed = ReminderSettings.safeParse(stored);
  if (!parsed.success) return null;
  try {
    return checkReminderSettings(parsed.data);
  } catch {
    return null;
  }
}

/**
 * The settings that apply to a submission: its own when it has some (`{max_count: 0}` turns
 * reminders off even where the account has a default), else the account's default; read when
 * each reminder comes due, so a change of either applies to the reminders still to come.
 * @param own the submission's `preferences.reminders` (absent: none of its own)
 * @param accountDefault the account's `preferences.reminders`
 */
export function effectiveReminders(own: unknown, accountDefault: unknown): Reminders | null {
  return own !== undefined && own !== null ? readReminders(own) : readReminders(accountDefault);
}

/** Where a party's sequence of reminders stands (a reminder_schedules row). */
export interface ReminderProgress {
  /** When the sequence began: the request was sent, or the party's email or phone changed. */
  startedAt: Date;
  /** Reminders recorded in this sequence (the number of the last one). */
  sentCount: number;
  /** When the last one was recorded; null before the first. */
  lastSentAt: Date | null;
}

const HOUR_MS = 3_600_000;

/**
 * When reminder number `sentCount + 1` is due: `first_after_hours` after the sequence began for
 * the first, `every_hours` after the one before for the others (so a reminder that went late,
 * e.g. after downtime, does not bring the next one forward).
 * @returns the instant, or null when there is none: `max_count` reached, or none is asked for
 */
export function reminderDueAt(reminders: Reminders | null, progress: ReminderProgress): Date | null {
  if (!reminders || progress.sentCount >= reminders.max_count) return null;
  if (progress.sentCount === 0) return new Date(progress.startedAt.getTime() + reminders.first_after_hours! * HOUR_MS);
  const after = progress.lastSentAt ?? progress.startedAt;
  return new Date(after.getTime() + reminders.every_hours! * HOUR_MS);
}

/** A channel and the address one reminder goes to. */
export interface ReminderAddress {
  channel: 'email' | 'sms';
  /** The party's email (lower case, as stored) or phone (E.164). */
  to: string;
}

/** The addresses a party's reminders go to: its email when `send_email`, its phone when `send_sms`. */
export function reminderAddresses(
  reminders: Reminders,
  party: { email: string | null; phone: string | null },
): ReminderAddress[] {
  return [
    ...(reminders.send_email && party.email ? [{ channel: 'email' as const, to: party.email }] : []),
    ...(reminders.send_sms && party.phone ? [{ channel: 'sms' as const, to: party.phone }] : []),
  ];
}
