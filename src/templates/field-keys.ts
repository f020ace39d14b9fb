/**
 * How a request names a field (DocuSeal's `values` / `fields` / `readonly_fields` keys,
 * lib/submissions/create_from_submitters.rb): by its uuid, its name, its name in any case, or its
 * parameterized name. One rule for the create service (src/submissions/create-submissions.ts) and
 * the signing page's embedded-form options (src/signing-form/page/), which imports it: no server
 * dependencies here.
 */

/** DocuSeal's parameterized form of a field name: "First Name" → "first_name". */
export function parameterize(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Whether `key` names this field: its uuid, name, downcased or parameterized name. */
export function matchesField(field: { uuid: string; name: string }, key: string): boolean {
  return (
    field.uuid === key ||
    field.name === key ||
    field.name.toLowerCase() === key.toLowerCase() ||
    parameterize(field.name) === key
  );
}
