/**
 * POST /api/attachments: the signing form's uploads (multipart/form-data, no API key; the slug
 * is the capability), DocuSeal's route (reference/docuseal-behaviour.md §1.1, docs/signing-form.md
 * "Uploads"). Registered on its own, outside the JSON gateway (../gateway.ts), whose
 * parsers read every body as JSON: multipart parsing is scoped to this route, and errors get the
 * gateway's DocuSeal bodies (`{"error": ...}`). Besides DocuSeal's `file`, a signature or
 * initials may come as its text, `typed_text` (Signet's page; rendered on the server).
 * `Idempotency-Key` is honoured when the request also carries a valid API key (../idempotency.ts).
 * A key's scopes and folders (src/accounts/key-scopes.ts) play no part: a read-only key sent along
 * gets what no key gets (docs/security.md "Scoped API keys").
 */
import { createHash } from 'node:crypto';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { INTERNAL_ERROR, restErrorFor, sendRestError as send } from '../errors.ts';
import type { Db } from '../../src/db/client.ts';
import type { FileUrlSigner } from '../../src/documents/file-urls.ts';
import type { FileStorage } from '../../src/documents/storage.ts';
import { AppError } from '../../src/errors.ts';
import { findAppError } from '../../src/graphql/errors.ts';
import {
  createSigningFormAttachment,
  createTypedSignatureAttachment,
  findUploadingSigner,
  type SignerUploadLimits,
} from '../../src/signing-form/attachments.ts';
import type { ImageLimits } from '../../src/documents/drawable-image.ts';
import { apiKeyFromHeaders, authenticate } from '../../src/accounts/authenticate.ts';
import { IDEMPOTENCY_KEY_HEADER, type IdempotencyKeys } from '../../src/accounts/idempotency-keys.ts';
import { beginIdempotentRequest, idempotentExecutionBegins, keepIdempotentAnswer } from '../idempotency.ts';

export const ATTACHMENTS_PATH = '/api/attachments';

export interface UploadRouteDeps {
  db: Db;
  storage: FileStorage;
  files: Pick<FileUrlSigner, 'url'>;
  /** Largest accepted file in bytes (the service's MAX_BODY_SIZE_MB, config.maxBodySize). */
  maxFileBytes: number;
  /** IMAGE_MAX_MB and IMAGE_MAX_MEGAPIXELS, for signature, initials and image uploads (drawable-image.ts). */
  images: ImageLimits;
  /** Each signer's uploads together: SIGNER_UPLOADS_MAX_MB, SIGNER_UPLOADS_MAX_FILES (docs/security.md). */
  uploads: SignerUploadLimits;
  /**
   * `Idempotency-Key` (../idempotency.ts): honoured for a caller with a valid API key, ignored for the
   * signing form's own uploads (no key: no account to scope it to).
   */
  idempotencyKeys?: IdempotencyKeys;
}

/** Text fields DocuSeal's form sends (submitter_slug, type, remember_signature, t …, typed_text); more is refused. */
const MAX_FIELDS = 10;
/** A text field's largest value in bytes: slugs and types are short. */
const MAX_FIELD_BYTES = 4096;

/** Registers the route (an encapsulated plugin: the multipart parser exists for it alone). */
export async function registerAttachmentUploadRoute(app: FastifyInstance, deps: UploadRouteDeps): Promise<void> {
  await app.register(async (scope) => {
    await scope.register(multipart, {
      limits: {
        fileSize: deps.maxFileBytes,
        files: 1,
        fields: MAX_FIELDS,
        fieldSize: MAX_FIELD_BYTES,
        parts: MAX_FIELDS + 1,
      },
    });

    scope.setErrorHandler((error, request, reply) => {
      // An AppError, or a database outage (503 with Retry-After).
      const appError = findAppError(error);
      if (appError) return send(reply, restErrorFor(appError));
      const code = (error as { code?: string }).code ?? '';
      if (code === 'FST_REQ_FILE_TOO_LARGE') {
        const limitMb = Math.round((deps.maxFileBytes / 1024 / 1024) * 10) / 10;
        return send(reply, restErrorFor(new AppError('VALIDATION', `File is too large (limit ${limitMb} MB)`)));
      }
      if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
        return send(
          reply,
          restErrorFor(new AppError('VALIDATION', 'Too many parts: send submitter_slug, type and one file')),
        );
      }
      if (
        code === 'FST_INVALID_MULTIPART_CONTENT_TYPE' ||
        code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ||
        code.startsWith('FST_ERR_CTP_')
      ) {
        return send(reply, restErrorFor(new AppError('VALIDATION', 'file is required (multipart/form-data)')));
      }
      if (
        (error as { statusCode?: number }).statusCode === 400 ||
        (error instanceof Error && /multipart|boundary/i.test(error.message))
      ) {
        return send(
          reply,
          restErrorFor(new AppError('BAD_REQUEST', `Malformed multipart body: ${(error as Error).message}`)),
        );
      }
      request.log.error({ err: error }, 'unexpected error in POST /api/attachments');
      return send(reply, INTERNAL_ERROR);
    });

    scope.addHook('onSend', keepIdempotentAnswer);

    // Also with DocuSeal's `.json` suffix, as every API path (rest-compat/gateway.ts).
    scope.post(`${ATTACHMENTS_PATH}.json`, (request, reply) => upload(request, reply));
    scope.post(ATTACHMENTS_PATH, (request, reply) => upload(request, reply));
    /**
     * With an Idempotency-Key and a valid API key: claims the key (the request is the form's fields
     * and the file's name, type and SHA-256), or answers with the kept answer (true). The service
     * runs next either way, so execution begins here.
     */
    async function answeredIdempotently(
      request: FastifyRequest,
      reply: FastifyReply,
      fields: Record<string, string>,
      file: { bytes: Buffer; filename: string; contentType: string } | undefined,
    ): Promise<boolean> {
      if (!deps.idempotencyKeys || request.headers[IDEMPOTENCY_KEY_HEADER] === undefined) return false;
      const viewer = await authenticate(
        deps.db,
        apiKeyFromHeaders((name) => headerValue(request, name)),
      );
      if (!viewer) return false;
      const body = {
        fields,
        file: file && {
          filename: file.filename,
          content_type: file.contentType,
          sha256: createHash('sha256').update(file.bytes).digest('hex'),
        },
      };
      if (
        await beginIdempotentRequest(deps.idempotencyKeys, request, reply, {
          accountId: viewer.account.id,
          apiKeyId: viewer.apiKeyId,
          body,
        })
      )
        return true;
      idempotentExecutionBegins(request);
      return false;
    }

    async function upload(request: FastifyRequest, reply: FastifyReply) {
      if (!request.isMultipart()) throw new AppError('VALIDATION', 'file is required (multipart/form-data)');
      const fields: Record<string, string> = {};
      let file: { bytes: Buffer; filename: string; contentType: string } | undefined;
      for await (const part of request.parts()) {
        if (part.type === 'file') {
          const bytes = await part.toBuffer();
          if (part.fieldname === 'file') file = { bytes, filename: part.filename, contentType: part.mimetype };
        } else if (typeof part.value === 'string') {
          fields[part.fieldname] = part.value;
        }
      }
      if (await answeredIdempotently(request, reply, fields, file)) return reply;
      // Unknown or missing slug: 404 as DocuSeal (find_by!), before anything about the file.
      const slug = fields.submitter_slug ?? '';
      if (!file && fields.typed_text !== undefined) {
        const created = await createTypedSignatureAttachment(deps, {
          slug,
          type: fields.type,
          text: fields.typed_text,
        });
        return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(created));
      }
      if (!file) {
        await findUploadingSigner(deps.db, slug);
        throw new AppError('VALIDATION', 'file is required');
      }
      const created = await createSigningFormAttachment(deps, {
        slug,
        type: fields.type,
        filename: file.filename,
        contentType: file.contentType,
        bytes: file.bytes,
      });
      return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(created));
    }
  });
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
