/**
 * Reminder settings over GraphQL (docs/reminders.md): the input `ReminderSettingsInput`, derived
 * from its one definition (src/notifications/reminder-settings.ts ReminderSettings) and taken by
 * `createSubmissions` (and the one-off creates), `updateSubmission` and `updateAccountPreferences`;
 * and the type `ReminderSettings` that `Submission.reminders` and `Account.reminders` answer with.
 */
import type { Reminders } from '../../notifications/reminder-settings.ts';
import { builder } from '../builder.ts';
import { zodInputType } from '../zod-input.ts';
import { ReminderSettings } from '../../notifications/reminder-settings.ts';

export const ReminderSettingsInputRef = zodInputType('ReminderSettingsInput', ReminderSettings);

export const ReminderSettingsRef = builder.objectRef<Reminders>('ReminderSettings').implement({
  description:
    'Reminders to parties who were sent a request and have not completed: the first `firstAfterHours` after the ' +
    'request, then every `everyHours`, at most `maxCount` times per party and address.',
  fields: (t) => ({
    firstAfterHours: t.int({ nullable: true, resolve: (r) => r.first_after_hours ?? null }),
    everyHours: t.int({ nullable: true, resolve: (r) => r.every_hours ?? null }),
    maxCount: t.exposeInt('max_count', { description: '0: no reminders.' }),
    sendEmail: t.exposeBoolean('send_email'),
    sendSms: t.exposeBoolean('send_sms'),
  }),
});
