/**
 * Each input is defined once (DESIGN.md "How a request flows"): the submission create request's zod
 * schemas in src/submissions/submitter-input.ts, a template field's and area's in
 * src/templates/build-fields.ts, the template create/update/clone/merge requests in
 * src/templates/template-requests.ts, the submission update in
 * src/submissions/update-submission-input.ts. GraphQL's input types, the REST body reading and the
 * validation are derived from them; these tests fail when a form is written by hand beside it.
 */
import {
  type GraphQLInputObjectType,
  getVariableValues,
  isNonNullType,
  type OperationDefinitionNode,
  parse,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { RestRequest, RestRoute } from '../rest-compat/gateway.ts';
import { restInput, restValue } from '../rest-compat/params.ts';
import { submissionReadRoutes } from '../rest-compat/routes/submissions.ts';
import { templateWriteRoutes } from '../rest-compat/routes/templates.ts';
import { AccountPreferencesChange } from '../src/accounts/account-preferences.ts';
import { parseInput } from '../src/accounts/api-keys.ts';
import { ReminderSettings } from '../src/notifications/reminder-settings.ts';
import { AppError } from '../src/errors.ts';
import { fromGraphQLInput } from '../src/graphql/zod-input.ts';
import { schema } from '../src/graphql/schema/index.ts';
import { camelKey, inputShape } from '../src/input-shape.ts';
import { text } from '../src/limits.ts';
import { BulkSendColumn, CreateBulkSendRequest } from '../src/submissions/bulk-send-input.ts';
import {
  CreateSubmissionsRequest,
  FieldConfig,
  MessageInput,
  SubmissionGroupInput,
  SubmitterInput,
  UpdateSubmitterRequest,
} from '../src/submissions/submitter-input.ts';
import { UploadSigningCertificateRequest } from '../src/signing/signing-certificate-input.ts';
import { UpdateSubmissionRequest } from '../src/submissions/update-submission-input.ts';
import { RequestArea, RequestField } from '../src/templates/build-fields.ts';
import { CreateApiKeyRequest } from '../src/templates/key-folders.ts';
import {
  CloneTemplateRequest,
  CreateTemplateFromFileRequest,
  CreateTemplateFromHtmlRequest,
  DocumentOperation,
  MergeTemplatesRequest,
  RequestRole,
  TemplateFileDocument,
  TemplateHtmlDocument,
  UpdateTemplateDocumentsRequest,
  UpdateTemplateRequest,
} from '../src/templates/template-requests.ts';

/** The schema's keys a request may give (internal ones excluded), in order. */
function requestKeys(definition: z.ZodObject): string[] {
  const shape = inputShape(definition);
  return shape.kind === 'object' ? shape.fields.map((f) => f.key) : [];
}

function rejection(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error.message;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('one definition per input', () => {
  const derived: [string, z.ZodObject][] = [
    ['SubmitterFieldInput', FieldConfig],
    ['EmailMessageInput', MessageInput],
    ['SubmitterInput', SubmitterInput],
    ['SubmissionGroupInput', SubmissionGroupInput],
    ['CreateSubmissionsInput', CreateSubmissionsRequest],
    ['FieldAreaInput', RequestArea],
    ['TemplateFieldInput', RequestField],
    ['UpdateSubmitterInput', UpdateSubmitterRequest],
    ['TemplateFileDocumentInput', TemplateFileDocument],
    ['CreateTemplateFromFileInput', CreateTemplateFromFileRequest],
    ['TemplateHtmlDocumentInput', TemplateHtmlDocument],
    ['CreateTemplateFromHtmlInput', CreateTemplateFromHtmlRequest],
    ['TemplateRoleInput', RequestRole],
    ['UpdateTemplateInput', UpdateTemplateRequest],
    ['CloneTemplateInput', CloneTemplateRequest],
    ['MergeTemplatesInput', MergeTemplatesRequest],
    ['UpdateSubmissionInput', UpdateSubmissionRequest],
    ['TemplateDocumentChangeInput', DocumentOperation],
    ['UpdateTemplateDocumentsInput', UpdateTemplateDocumentsRequest],
    ['ReminderSettingsInput', ReminderSettings],
    ['UpdateAccountPreferencesInput', AccountPreferencesChange],
    ['BulkSendColumnInput', BulkSendColumn],
    ['CreateBulkSendInput', CreateBulkSendRequest],
    ['CreateApiKeyInput', CreateApiKeyRequest],
    ['UploadSigningCertificateInput', UploadSigningCertificateRequest],
  ];

  it.each(derived)(
    'GraphQL %s has exactly the camelCase of the definition’s keys, required as it says',
    (name, def) => {
      const type = schema.getType(name) as GraphQLInputObjectType;
      const fields = Object.values(type.getFields());
      // (The printed schema sorts fields by name.)
      expect(fields.map((f) => f.name).sort()).toEqual(requestKeys(def).map(camelKey).sort());
      const shape = inputShape(def);
      for (const field of fields) {
        const key = requestKeys(def).find((k) => camelKey(k) === field.name)!;
        expect(isNonNullType(field.type), `${name}.${field.name}`).toBe(!def.shape[key]!.safeParse(undefined).success);
        // Descriptions come from the definition's meta too.
        const described = shape.kind === 'object' ? shape.fields.find((f) => f.key === key)?.description : undefined;
        expect(field.description ?? undefined, `${name}.${field.name}`).toBe(described);
      }
      // Keys the domain takes from elsewhere only (the service) stay out; a field's `validation`
      // object is a request key (DocuSeal's fields[].validation, read on create and PUT /submitters).
      if (name === 'SubmitterFieldInput') expect(fields.map((f) => f.name)).toContain('validation');
      if (name === 'SubmitterInput') expect(fields.map((f) => f.name)).not.toContain('index');
    },
  );

  it('REST reads exactly the definition’s snake_case keys, into GraphQL’s camelCase keys', () => {
    const body: Record<string, unknown> = {};
    for (const key of requestKeys(SubmitterInput)) body[key] = null;
    const every = Object.fromEntries(
      requestKeys(FieldConfig).map((key) => [
        key,
        key === 'preferences' || key === 'validation'
          ? { a: 1 }
          : key === 'readonly' || key === 'required'
            ? true
            : 'x',
      ]),
    );
    const read = restInput(SubmitterInput, {
      email: 'a@example.test',
      external_id: 'e-1',
      send_email: 'false',
      order: '2',
      fields: [every],
      readonly_fields: ['A', 3],
      unknown_key: 'ignored',
      externalId: 'camelCase keys are not DocuSeal’s',
    });
    expect(read).toEqual({
      email: 'a@example.test',
      externalId: 'e-1',
      sendEmail: false,
      order: 2,
      fields: [Object.fromEntries(requestKeys(FieldConfig).map((key) => [camelKey(key), every[key]]))],
      readonlyFields: ['A', '3'],
    });
    // A route calling the service directly keeps the definition's keys, with the same coercions.
    expect(
      restInput(SubmitterInput, { external_id: 5, send_sms: 'on', values: { A: 1 } }, { keys: 'docuseal' }),
    ).toEqual({ external_id: '5', send_sms: true, values: { A: 1 } });
    // And GraphQL's input goes back to the definition's keys unchanged.
    expect(fromGraphQLInput(SubmitterInput, read)).toEqual({
      email: 'a@example.test',
      external_id: 'e-1',
      send_email: false,
      order: 2,
      fields: [every],
      readonly_fields: ['A', '3'],
    });
  });

  it('a key and a limit added to the definition show up in REST, the GraphQL mapping and the 422 alike', () => {
    const Extended = SubmitterInput.extend({ nick_name: text(3).optional() });
    const read = restInput(Extended, { email: 'a@example.test', nick_name: 'Joanna' });
    expect(read).toEqual({ email: 'a@example.test', nickName: 'Joanna' });
    const back = fromGraphQLInput(Extended, read);
    expect(back).toEqual({ email: 'a@example.test', nick_name: 'Joanna' });
    expect(rejection(() => parseInput(Extended, back, { at: 'submitters[0]' }))).toBe(
      'submitters[0].nick_name is too long (maximum is 3 characters).',
    );
    // Its type is checked as DocuSeal does, with the key it has.
    expect(rejection(() => restInput(Extended, { nick_name: { a: 1 } }, { where: 'submitters[0]' }))).toBe(
      'nick_name must be a String in `submitters[0]`.',
    );
  });

  it('REST type errors keep DocuSeal’s messages and paths', () => {
    const submitters = CreateSubmissionsRequest.shape.submitters;
    expect(rejection(() => restValue(submitters, { email: 'x' }, 'submitters'))).toBe('submitters must be a Array');
    expect(rejection(() => restValue(submitters, ['x'], 'submitters'))).toBe('0 must be a Object in `submitters`.');
    expect(rejection(() => restValue(submitters, [{ values: [] }], 'submitters'))).toBe(
      'values must be a Object in `submitters[0]`.',
    );
    expect(rejection(() => restValue(submitters, [{ fields: {} }], 'submitters'))).toBe(
      'fields must be a Array in `submitters[0]`.',
    );
    expect(rejection(() => restValue(submitters, [{ fields: [{ title: [] }] }], 'submitters'))).toBe(
      'title must be a String in `submitters[0].fields[0]`.',
    );
    expect(rejection(() => restValue(submitters, [{ order: 'first' }], 'submitters'))).toBe(
      'order must be a Integer in `submitters[0]`.',
    );
    expect(rejection(() => restInput(CreateSubmissionsRequest, { reply_to: {} }))).toBe('reply_to must be a String');
    expect(rejection(() => restInput(CreateSubmissionsRequest, { expire_at: 'soon' }))).toBe('expire_at is invalid');
    // The earlier keys (interface spec "Versioning") are read where the key is absent.
    expect(restValue(submitters, [{ application_key: 'k', fields: [{ name: 'A', value: 1 }] }], 'submitters')).toEqual([
      { externalId: 'k', fields: [{ name: 'A', defaultValue: 1 }] },
    ]);
    expect(restInput(CreateSubmissionsRequest, { expire_at: '2030-01-02 03:04:05' })).toEqual({
      expireAt: '2030-01-02T03:04:05.000Z',
    });
  });
});

/** A REST route's variables for a body (no server: the route's reading only). */
function routeVariables(routes: RestRoute[], method: string, path: string, request: Partial<RestRequest>) {
  const route = routes.find(
    (r) => r.path === path && (Array.isArray(r.method) ? r.method : [r.method]).includes(method as never),
  )!;
  return route.variables!({ params: {}, query: {}, body: undefined, context: undefined as never, ...request }) as {
    input: Record<string, unknown>;
  };
}

/** The variables as GraphQL coerces them for the route's operation: the derived type accepts them, or errors. */
function coerced(routes: RestRoute[], method: string, path: string, variables: Record<string, unknown>) {
  const route = routes.find(
    (r) => r.path === path && (Array.isArray(r.method) ? r.method : [r.method]).includes(method as never),
  )!;
  const operation = parse(route.operation).definitions.find(
    (d): d is OperationDefinitionNode => d.kind === 'OperationDefinition',
  )!;
  return getVariableValues(schema, operation.variableDefinitions ?? [], variables);
}

describe('template and submission requests: REST reads the definition, GraphQL takes what it reads', () => {
  it('PUT /templates/{id}: the definition’s keys (and the earlier ones), cast as Rails casts them', () => {
    const body = {
      template: {
        name: 'N',
        folder_name: 'A / B',
        application_key: 7,
        shared_link: 'true',
        roles: ['Buyer', 2],
        archived: '0',
        sharedLink: false,
        slug: 'not read',
      },
    };
    const { input } = routeVariables(templateWriteRoutes, 'PUT', '/templates/:id', { params: { id: '12' }, body });
    expect(input).toEqual({
      id: 12,
      name: 'N',
      folderName: 'A / B',
      externalId: '7',
      sharedLink: true,
      roles: ['Buyer', '2'],
      archived: false,
    });
    expect(coerced(templateWriteRoutes, 'PUT', '/templates/:id', { input }).errors).toBeUndefined();
    expect(fromGraphQLInput(UpdateTemplateRequest, input)).toEqual({
      id: 12,
      name: 'N',
      folder_name: 'A / B',
      external_id: '7',
      shared_link: true,
      roles: ['Buyer', '2'],
      archived: false,
    });
    expect(
      rejection(() =>
        routeVariables(templateWriteRoutes, 'PUT', '/templates/:id', { params: { id: '1' }, body: { roles: 'x' } }),
      ),
    ).toBe('roles must be a Array');
  });

  it('clone and merge: DocuSeal’s `documents: [{name}]` is the definition’s document_names; ids are Integers', () => {
    const clone = routeVariables(templateWriteRoutes, 'POST', '/templates/:id/clone', {
      params: { id: '3' },
      body: { name: 'C', documents: [{ name: 'First' }, { name: 'Second' }], document_names: ['ignored'] },
    });
    expect(clone.input).toEqual({ id: 3, name: 'C', documentNames: ['First', 'Second'] });
    expect(coerced(templateWriteRoutes, 'POST', '/templates/:id/clone', clone).errors).toBeUndefined();
    const merge = routeVariables(templateWriteRoutes, 'POST', '/templates/merge', {
      body: { template_ids: [1, '2'], folder_name: 'F', roles: ['R'] },
    });
    expect(merge.input).toEqual({ templateIds: [1, 2], folderName: 'F', roles: ['R'] });
    expect(coerced(templateWriteRoutes, 'POST', '/templates/merge', merge).errors).toBeUndefined();
    expect(rejection(() => routeVariables(templateWriteRoutes, 'POST', '/templates/merge', { body: {} }))).toBe(
      'template_ids is required.',
    );
    expect(
      rejection(() =>
        routeVariables(templateWriteRoutes, 'POST', '/templates/merge', { body: { template_ids: ['x'] } }),
      ),
    ).toBe('0 must be a Integer in `template_ids`.');
  });

  it('POST /templates/pdf and /html: documents and fields read against their definitions', () => {
    const pdf = routeVariables(templateWriteRoutes, 'POST', '/templates/pdf', {
      body: {
        name: 'P',
        external_id: 'x-1',
        documents: [{ name: 'd', file: 'QQ==', fields: [{ type: 'text', options: [{ value: 'a', uuid: 'u' }] }] }],
        fields: [{ name: 'Top', areas: [{ x: '1', y: 2, w: 3, h: 4, page: '1' }] }],
      },
    });
    expect(pdf.input).toEqual({
      name: 'P',
      externalId: 'x-1',
      documents: [
        { name: 'd', file: 'QQ==', fields: [{ name: '', type: 'text', options: [{ value: 'a', uuid: 'u' }] }] },
      ],
      fields: [{ name: 'Top', areas: [{ x: 1, y: 2, w: 3, h: 4, page: 1 }] }],
    });
    expect(coerced(templateWriteRoutes, 'POST', '/templates/pdf', pdf).errors).toBeUndefined();
    expect(rejection(() => routeVariables(templateWriteRoutes, 'POST', '/templates/pdf', { body: {} }))).toBe(
      'documents is required.',
    );
    expect(
      rejection(() =>
        routeVariables(templateWriteRoutes, 'POST', '/templates/pdf', { body: { documents: [{ name: 'd' }] } }),
      ),
    ).toBe('file is required in `documents[0]`.');
    const html = routeVariables(templateWriteRoutes, 'POST', '/templates/html', {
      body: { html: '<p>x</p>', html_header: 'H', size: 'A4', shared_link: false, documents: [{ html: '<p>y</p>' }] },
    });
    expect(html.input).toEqual({
      html: '<p>x</p>',
      htmlHeader: 'H',
      size: 'A4',
      sharedLink: false,
      documents: [{ html: '<p>y</p>' }],
    });
    expect(coerced(templateWriteRoutes, 'POST', '/templates/html', html).errors).toBeUndefined();
  });

  it('PUT /templates/{id}/documents: each change read against DocumentOperation; an empty file is none', () => {
    const put = (body: unknown) =>
      routeVariables(templateWriteRoutes, 'PUT', '/templates/:id/documents', { params: { id: '4' }, body });
    const read = put({
      merge: 'yes',
      documents: [
        { file: '', html: '<p/>', position: '1' },
        { name: 7, remove: 1 },
      ],
    });
    expect(read.input).toEqual({
      id: 4,
      merge: true,
      documents: [
        { html: '<p/>', position: 1 },
        { name: '7', remove: true },
      ],
    });
    expect(coerced(templateWriteRoutes, 'PUT', '/templates/:id/documents', read).errors).toBeUndefined();
    expect(rejection(() => put({}))).toBe('documents is required.');
    expect(rejection(() => put({ documents: [{ position: 1.5 }] }))).toBe(
      'position must be a Integer in `documents[0]`.',
    );
    expect(rejection(() => put({ documents: ['x'] }))).toBe('0 must be a Object in `documents`.');
    // The limits are the definition's: the count, and each change's rules at its path.
    const many = { id: 4, documents: Array.from({ length: 51 }, () => ({ remove: true })) };
    expect(rejection(() => parseInput(UpdateTemplateDocumentsRequest, many))).toBe(
      'documents has too many entries (maximum is 50).',
    );
    expect(
      rejection(() => parseInput(UpdateTemplateDocumentsRequest, { id: 4, documents: [{}, { position: -1 }] })),
    ).toBe('position must be 0 or more in `documents[1].position`.');
  });

  it('PUT /submissions/{id}: archived_at, expire_at: null are DocuSeal’s names for archived, clear_expire_at', () => {
    const put = (body: unknown) =>
      routeVariables(submissionReadRoutes, 'PUT', '/submissions/:id', { params: { id: '9' }, body });
    const cleared = put({ submission: { name: 5, expire_at: null, archived_at: 'true', clearExpireAt: false } });
    expect(cleared.input).toEqual({ id: 9, name: '5', clearExpireAt: true, archived: true });
    expect(coerced(submissionReadRoutes, 'PUT', '/submissions/:id', cleared).errors).toBeUndefined();
    const moved = put({ expire_at: '2030-01-02 03:04:05', archived: false, clear_expire_at: true });
    expect(moved.input).toEqual({ id: 9, expireAt: '2030-01-02T03:04:05.000Z', archived: false });
    const { coerced: variables } = coerced(submissionReadRoutes, 'PUT', '/submissions/:id', moved);
    // GraphQL's DateTime gives a Date, which the definition takes.
    expect(parseInput(UpdateSubmissionRequest, fromGraphQLInput(UpdateSubmissionRequest, variables!.input))).toEqual({
      id: 9,
      expire_at: new Date('2030-01-02T03:04:05.000Z'),
      archived: false,
    });
    expect(rejection(() => put({ expire_at: 'soon' }))).toBe('expire_at is invalid');
    expect(rejection(() => parseInput(UpdateSubmissionRequest, { id: 1, name: 'n'.repeat(256) }))).toBe(
      'name is too long (maximum is 255 characters).',
    );
  });
});
