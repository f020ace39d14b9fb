/**
 * The input of an account's certificate upload (issue 17), defined once (docs/architecture.md
 * "Inputs: one definition each"): GraphQL's `UploadSigningCertificateInput` is derived from it, and
 * the CLI's `signet certificate upload` builds the same object. Kept apart from
 * account-certificates.ts so that the schema does not load the PKI libraries at start.
 */
import { z } from 'zod';
import { PKI_LIMITS } from '../limits.ts';

/** The upload request, in DocuSeal-style snake_case keys (GraphQL `UploadSigningCertificateInput`). */
export const UploadSigningCertificateRequest = z.object({
  file: z
    .string()
    .min(1)
    .max(Math.ceil((PKI_LIMITS.pkcs12Bytes * 4) / 3) + 4)
    .meta({ description: 'The PKCS#12 (.p12/.pfx) bundle, base64: the private key and its certificate (and chain).' }),
  password: z.string().max(PKI_LIMITS.pkcs12Password).meta({ description: "The bundle's password." }),
  name: z
    .string()
    .max(PKI_LIMITS.certificateName)
    .optional()
    .meta({ description: "A label; default the certificate's common name." }),
});
export type UploadSigningCertificateRequest = z.infer<typeof UploadSigningCertificateRequest>;
