/**
 * The DocuSeal REST API as one HTTP API for buildApp (src/app.ts `apis`): every route of the JSON
 * gateway under /api, and the signing form's multipart upload (POST /api/attachments). The
 * composition root (main.ts; test/helpers/app.ts in tests) passes it in, so the dependency runs
 * rest-compat → src only.
 */
import type { HttpApi } from '../src/app.ts';
import { registerRestGateway, type RestRoute } from './gateway.ts';
import { registerAttachmentUploadRoute } from './routes/attachments.ts';
import { bulkSendRoutes } from './routes/bulk-sends.ts';
import { eventFeedRoutes } from './routes/events.ts';
import { signingFormRoutes } from './routes/signing-form.ts';
import { submissionReadRoutes, submissionRoutes } from './routes/submissions.ts';
import { templateRoutes, templateWriteRoutes } from './routes/templates.ts';
import { toolRoutes } from './routes/tools.ts';
import { userRoutes } from './routes/user.ts';

/** Every DocuSeal REST route of the JSON gateway, in one list. */
export const restRoutes: RestRoute[] = [
  ...userRoutes,
  ...templateRoutes,
  ...templateWriteRoutes,
  ...submissionRoutes,
  ...submissionReadRoutes,
  ...signingFormRoutes,
  ...toolRoutes,
  ...eventFeedRoutes,
  ...bulkSendRoutes,
];
export { registerRestGateway, type RestRoute } from './gateway.ts';

/**
 * The DocuSeal REST API, mounted at /api.
 * @param options.extraRoutes more gateway routes (tests use this to exercise the gateway's error paths)
 */
export function docusealRestApi(options: { extraRoutes?: RestRoute[] } = {}): HttpApi {
  return async (fastify, { config, db, schema, contextFactory, storage, signer, idempotencyKeys }) => {
    // The signing form's multipart uploads (no API key), beside the JSON gateway.
    await registerAttachmentUploadRoute(fastify, {
      db,
      storage,
      files: signer,
      maxFileBytes: config.maxBodySize,
      images: config.images,
      uploads: config.signerUploads,
      idempotencyKeys,
    });
    await registerRestGateway(fastify, {
      schema,
      routes: [...restRoutes, ...(options.extraRoutes ?? [])],
      contextFactory,
      bodyLimit: config.maxBodySize,
      idempotencyKeys,
    });
  };
}
