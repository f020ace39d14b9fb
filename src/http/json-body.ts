/**
 * A request body read as JSON, as the REST API reads every body (DocuSeal parses each /api body as
 * JSON whatever its Content-Type, reference/docuseal-behaviour.md §2). A body up to
 * LARGE_BODY_BYTES is parsed on the event loop; a larger one — base64 documents make bodies of
 * tens of megabytes, and decoding and parsing 40 MB took ~0.4 s of CPU here (issue 23) — in the
 * parse pool (src/parse-pool/), with its limits, so the event loop only copies the result back.
 */
import { AppError } from '../errors.ts';
import { runParseTask } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';

/** Bodies larger than this (bytes) are parsed in the parse pool: 1 MB parses in a few milliseconds. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * A body's JSON value: undefined for an empty (or blank) body.
 * @param body the body's bytes, handed over to the parse pool's worker when large (not used afterwards)
 * @param owner whose task it is in the parse pool's fair queue (the caller's account id, else its address)
 * @throws AppError VALIDATION `JSON parse error: <reason>`; the parse pool's limits
 */
export async function parseJsonBody(body: Buffer, owner: string | number): Promise<unknown> {
  if (body.length <= LARGE_BODY_BYTES) return parseJsonBodyHere(body);
  const bytes = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : new Uint8Array(body);
  return runParseTask(parseJsonBodyTask, [bytes], { owner, subject: 'The request body', transfer: [bytes] });
}

/** parseJsonBody on the calling thread (the parse pool's `parseJsonBody` task for large bodies). */
export function parseJsonBodyHere(body: Uint8Array): unknown {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AppError('VALIDATION', `JSON parse error: ${(error as Error).message}`);
  }
}

/** The parse pool's `parseJsonBody` task: parseJsonBodyHere in a worker (src/parse-pool/tasks.ts). */
export const parseJsonBodyTask = parseTask('parseJsonBody', parseJsonBodyHere);
