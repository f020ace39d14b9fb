/**
 * Accounts and users over GraphQL: the Account and User types, and `updateAccountPreferences` (the
 * account's settings, src/accounts/account-preferences.ts).
 */
import {
  AccountPreferencesChange,
  accountReminders,
  parseAccountPreferences,
  updateAccountPreferences,
} from '../../accounts/account-preferences.ts';
import { parseInput } from '../../accounts/api-keys.ts';
import { accountDefaultLanguage } from '../../i18n/signer-language.ts';
import { accountConsentTexts } from '../../accounts/consent-texts.ts';
import { builder } from '../builder.ts';
import { requireEveryFolder } from '../../accounts/key-scopes.ts';
import { requireViewer } from '../context.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';
// Registered first: the settings input is part of UpdateAccountPreferencesInput.
import { ReminderSettingsRef } from './reminders.ts';

export const AccountRef = builder.prismaObject('Account', {
  description: 'A tenant: the owner of templates, submissions, users and API keys.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    name: t.exposeString('name'),
    timezone: t.exposeString('timezone'),
    locale: t.exposeString('locale'),
    testing: t.exposeBoolean('testing', {
      description: 'Testing accounts produce documents marked not legally binding.',
    }),
    combinePdfResult: t.boolean({
      description:
        'Completion also makes one signed PDF of the final documents followed by the audit log ' +
        '(`Submission.combinedDocumentUrl`; DocuSeal "combine PDF result"). Default false.',
      select: { preferences: true },
      resolve: (a) => parseAccountPreferences(a.preferences).combine_pdf_result === true,
    }),
    reminders: t.field({
      type: ReminderSettingsRef,
      nullable: true,
      description:
        'Default reminder settings of the submissions without their own (docs/reminders.md); null when none.',
      select: { preferences: true },
      resolve: (a) => accountReminders(parseAccountPreferences(a.preferences)),
    }),
    defaultLanguage: t.string({
      nullable: true,
      description:
        'The language of its signers for whom nothing else names one (a code: de, ar, …; docs/signing-form.md ' +
        '"Languages"); null when unset: the signer’s browser decides, else English. `locale` is DocuSeal’s ' +
        'account locale, kept as given.',
      select: { preferences: true },
      resolve: (a) => accountDefaultLanguage(a.preferences) ?? null,
    }),
    signingConsentText: t.field({
      type: 'JSON',
      nullable: true,
      description:
        'The account’s own electronic-signature disclosure, `{"default": text, "<code>": text, …}`, or null when its ' +
        'signers are shown Signet’s (docs/signing-form.md "Consent").',
      select: { preferences: true },
      resolve: (a) => accountConsentTexts(a.preferences),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

export const UserRef = builder.prismaObject('User', {
  description: 'A person of an account.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    email: t.exposeString('email'),
    firstName: t.exposeString('firstName', { nullable: true }),
    lastName: t.exposeString('lastName', { nullable: true }),
    role: t.exposeString('role'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    account: t.relation('account'),
  }),
});

// Derived from its one definition (src/accounts/account-preferences.ts).
const UpdateAccountPreferencesInput = zodInputType('UpdateAccountPreferencesInput', AccountPreferencesChange);

builder.mutationField('updateAccountPreferences', (t) =>
  t.prismaField({
    type: AccountRef,
    description: "Sets the caller's account settings given (the others are kept); returns the account.",
    args: { input: t.arg({ type: UpdateAccountPreferencesInput, required: true }) },
    resolve: async (query, _root, { input }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      // The account's settings apply to every folder's templates.
      requireEveryFolder(folders, "the account's settings");
      const change = parseInput(AccountPreferencesChange, fromGraphQLInput(AccountPreferencesChange, input));
      await updateAccountPreferences(ctx.db, { accountId: account.id, change });
      return ctx.db.account.findUniqueOrThrow({ ...query, where: { id: account.id } });
    },
  }),
);
