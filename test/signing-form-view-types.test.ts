/**
 * The signing form's view is defined once (src/signing-form/view-types.ts) for the server and the
 * page: these assertions are checked by the type check (`npm run typecheck`, run in CI), so a page
 * type that drifts from the server's view fails it.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { SigningFormField as ServerField, SigningFormView } from '../src/signing-form/load-signing-form.ts';
import type { FieldArea, SigningForm, SigningFormField as PageField } from '../src/signing-form/page/types.ts';
import type { Area } from '../src/templates/fields.ts';

describe('the signing form view, server and page', () => {
  it('has the same keys at every level', () => {
    expectTypeOf<keyof SigningForm>().toEqualTypeOf<keyof SigningFormView>();
    expectTypeOf<keyof SigningForm['submitter']>().toEqualTypeOf<keyof SigningFormView['submitter']>();
    expectTypeOf<keyof SigningForm['submission']>().toEqualTypeOf<keyof SigningFormView['submission']>();
    expectTypeOf<keyof PageField>().toEqualTypeOf<keyof ServerField>();
    expectTypeOf<SigningForm['documents']>().toEqualTypeOf<SigningFormView['documents']>();
    expectTypeOf<PageField['attachments']>().toEqualTypeOf<ServerField['attachments']>();
  });

  it('differs only in how times and areas travel', () => {
    expectTypeOf<SigningFormView['submitter']['openedAt']>().toEqualTypeOf<Date | null>();
    expectTypeOf<SigningForm['submitter']['openedAt']>().toEqualTypeOf<string | null>();
    expectTypeOf<SigningForm['submission']['expireAt']>().toEqualTypeOf<string | null>();
    expectTypeOf<ServerField['areas']>().toEqualTypeOf<Area[]>();
    expectTypeOf<PageField['areas']>().toEqualTypeOf<FieldArea[]>();
    expectTypeOf<Omit<PageField, 'areas'>>().toEqualTypeOf<Omit<ServerField, 'areas'>>();
  });
});
