/**
 * Validating responses against DocuSeal's published OpenAPI document (reference/docuseal-openapi.json,
 * OpenAPI 3.1 = JSON Schema 2020-12) with ajv.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ROOT } from './processes.ts';

const document = JSON.parse(
  fs.readFileSync(path.join(ROOT, '..', 'shared', 'reference', 'docuseal-openapi.json'), 'utf8'),
) as {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
  >;
};

const ajv = new Ajv2020.default({ strict: false, allErrors: true });
addFormats.default(ajv);

/**
 * The errors of `body` against the response schema of `method path` (status 200), or [] when it conforms.
 * @param path the OpenAPI path, e.g. "/templates/{id}"
 */
export function openApiErrors(method: string, pathName: string, body: unknown, status = '200'): string[] {
  const schema =
    document.paths[pathName]?.[method.toLowerCase()]?.responses[status]?.content?.['application/json']?.schema;
  if (!schema) throw new Error(`no schema for ${method} ${pathName} ${status}`);
  const validate = ajv.compile(schema as object);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}
