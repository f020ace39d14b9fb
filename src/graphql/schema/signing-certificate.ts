/**
 * An account's own signing certificates over GraphQL (issue 17; src/signing/account-certificates.ts):
 * the `SigningCertificate` type with its expiry warning, the `signingCertificates` query and the
 * `uploadSigningCertificate` / `revokeSigningCertificate` mutations. The key and its password are
 * never returned.
 */
import type { SigningCertificateView } from '../../signing/account-certificates.ts';
import { UploadSigningCertificateRequest } from '../../signing/signing-certificate-input.ts';
import { builder } from '../builder.ts';
import { CertificateRef } from './certificate-summary.ts';
import { requireEveryFolder } from '../../accounts/key-scopes.ts';
import { requireViewer } from '../context.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';

const SigningCertificateRef = builder.objectRef<SigningCertificateView>('SigningCertificate').implement({
  description:
    "A certificate of the account's own that signs its completed documents instead of the service's " +
    '(docs/signatures.md).',
  interfaces: [CertificateRef],
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    inUse: t.exposeBoolean('inUse', { description: "Signs the account's documents now." }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiryWarning: t.exposeString('expiryWarning', {
      nullable: true,
      description:
        'Set from SIGNING_CERTIFICATE_WARNING_DAYS (default 30) days before it expires, and once it has ' +
        "(then the service's certificate signs): what to do.",
    }),
  }),
});

// Derived from its one definition (src/signing/account-certificates.ts).
const UploadSigningCertificateInput = zodInputType('UploadSigningCertificateInput', UploadSigningCertificateRequest);

/** Loaded on first use: the PKCS#12, CA and crypto modules are memory an idle service need not hold. */
const service = () => import('../../signing/account-certificates.ts');

builder.queryField('signingCertificates', (t) =>
  t.field({
    type: [SigningCertificateRef],
    description: "The account's own signing certificates, newest first (revoked ones too).",
    resolve: async (_root, _args, ctx) => {
      const { account, folders } = requireViewer(ctx);
      // Account-wide: a key limited to template folders has no say over them (docs/security.md).
      requireEveryFolder(folders, "the account's signing certificates");
      return (await service()).listSigningCertificates(ctx, { accountId: account.id });
    },
  }),
);

builder.mutationField('uploadSigningCertificate', (t) =>
  t.field({
    type: SigningCertificateRef,
    description:
      "Stores a PKCS#12 (key and certificate) as the account's signing certificate, sealed with the secret " +
      'key; it signs the account’s documents from the next completion on. VALIDATION when it does not open with ' +
      'the password, has expired, is not valid yet, or does not allow signing.',
    args: { input: t.arg({ type: UploadSigningCertificateInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      // Account-wide: a key limited to template folders has no say over them (docs/security.md).
      requireEveryFolder(folders, "the account's signing certificates");
      return (await service()).uploadSigningCertificate(ctx, {
        accountId: account.id,
        request: fromGraphQLInput(UploadSigningCertificateRequest, input),
      });
    },
  }),
);

builder.mutationField('revokeSigningCertificate', (t) =>
  t.field({
    type: SigningCertificateRef,
    description:
      "Revokes one of the account's certificates: it signs nothing more (the newest other valid one, else the " +
      "service's, signs instead). NOT_FOUND for another account's.",
    args: { id: t.arg.int({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      // Account-wide: a key limited to template folders has no say over them (docs/security.md).
      requireEveryFolder(folders, "the account's signing certificates");
      return (await service()).revokeSigningCertificate(ctx, { accountId: account.id, id });
    },
  }),
);
