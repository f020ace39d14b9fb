/**
 * DocuSeal's user JSON: `GET /api/user` (reference/docuseal-behaviour.md §1), a template's
 * `author` (§5.5) and a submission's `created_by_user` (§5.1), all `{id, first_name, last_name,
 * email}` in the key order of each shape.
 *
 * Names: DocuSeal's OpenAPI types `first_name` and `last_name` as strings, and its users get them
 * from forms, which submit "" for a name left empty; Signet's users may have none (an account
 * made without names, `signet` CLI), so a missing name is sent as "" (docs/compatibility.md), never
 * as null, which a client validating against that schema would refuse.
 */

export interface UserData {
  id: number;
  email: string;
  firstName: string | null;
  lastName: string | null;
}

/** A user's name part as DocuSeal's OpenAPI types it: a string, "" when the user has none. */
export const userName = (name: string | null | undefined): string => name ?? '';

/** `GET /api/user`: `{id, first_name, last_name, email}`. */
export function serializeUser(user: UserData) {
  return { id: user.id, first_name: userName(user.firstName), last_name: userName(user.lastName), email: user.email };
}
