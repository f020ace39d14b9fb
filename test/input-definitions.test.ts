/**
 * Each input is defined once (DESIGN.md "How a request flows"): the submission create request's zod
 * schemas in src/submissions/submitter-input.ts, a template field's and area's in
 * src/templates/build-fields.ts. GraphQL's input types, the REST body reading and the
 * validation are derived from them; these tests fail when a form is written by hand beside it.
 */
import { type GraphQLInputObjectType, isNonNullType } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { restInput, restValue } from '../rest-compat/params.ts';
import { parseInput } from '../src/accounts/api-keys.ts';
import { AppError } from '../src/errors.ts';
import { fromGraphQLInput } from '../src/graphql/zod-input.ts';
import { schema } from '../src/graphql/schema/index.ts';
import { camelKey, inputShape } from '../src/input-shape.ts';
import { text } from '../src/limits.ts';
import {
  CreateSubmissionsRequest,
  FieldConfig,
  MessageInput,
  SubmissionGroupInput,
  SubmitterInput,
  UpdateSubmitterRequest,
} from '../src/submissions/submitter-input.ts';
import { RequestArea, RequestField } from '../src/templates/build-fields.ts';

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
  ];

  it.each(derived)(
    'GraphQL %s has exactly the camelCase of the definition’s keys, required as it says',
    (name, def) => {
      const type = schema.getType(name) as GraphQLInputObjectType;
      const fields = Object.values(type.getFields());
      // (The printed schema sorts fields by name.)
      expect(fields.map((f) => f.name).sort()).toEqual(requestKeys(def).map(camelKey).sort());
      for (const field of fields) {
        const key = requestKeys(def).find((k) => camelKey(k) === field.name)!;
        expect(isNonNullType(field.type), `${name}.${field.name}`).toBe(!def.shape[key]!.safeParse(undefined).success);
      }
      // Keys the domain takes from elsewhere only (PUT /submitters' JSON, the service) stay out.
      if (name === 'SubmitterFieldInput') expect(fields.map((f) => f.name)).not.toContain('validation');
      if (name === 'SubmitterInput') expect(fields.map((f) => f.name)).not.toContain('index');
    },
  );

  it('REST reads exactly the definition’s snake_case keys, into GraphQL’s camelCase keys', () => {
    const body: Record<string, unknown> = {};
    for (const key of requestKeys(SubmitterInput)) body[key] = null;
    const every = Object.fromEntries(
      requestKeys(FieldConfig).map((key) => [
        key,
        key === 'preferences' ? { a: 1 } : key === 'readonly' || key === 'required' ? true : 'x',
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
