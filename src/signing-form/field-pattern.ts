/**
 * A field's `validation.pattern` as the HTML `pattern` attribute reads it (DocuSeal's form uses
 * that attribute): the whole value must match; compiled with the `u` flag as browsers do, else
 * without it. Shared by the server's completion checks (field-values.ts) and the signing page
 * (page/values.ts), so both judge a value the same way.
 * @returns null for a pattern JavaScript cannot compile (the template's fault, not the signer's)
 */
export function compileFieldPattern(pattern: string): RegExp | null {
  try {
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    try {
      return new RegExp(`^(?:${pattern})$`);
    } catch {
      return null;
    }
  }
}
