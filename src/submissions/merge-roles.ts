/**
 * One person signing several roles (`submitters[].roles` on create): the roles become one role of
 * the submission, with every field of theirs — DocuSeal's `merge_submitters_and_fields` and
 * `build_merged_submitter` (lib/submissions/create_from_submitters.rb):
 *
 * - each name in `roles` must be a role of the template (case-insensitive), else 422
 *   `<name> role doesn't exist`;
 * - the merged role takes the first merged role's place in the role order, named by the
 *   submitter's `role` when given, else the names joined with ` / `; its uuid is the UUID v5 (OID
 *   namespace) of the merged roles' uuids, sorted and joined with `:`, as DocuSeal's;
 * - the merged roles' fields go to it in role order; a field whose name an earlier merged field
 *   already has adds its areas to that field instead (one value fills both places).
 *
 * Library: `uuid` (RFC 9562 name-based UUIDs; Node's crypto has only v4).
 */
import { v5 as uuidV5 } from 'uuid';
import { AppError } from '../errors.ts';
import type { Field, Role } from '../templates/fields.ts';

/** RFC 9562 Appendix C: the namespace for ISO OIDs, DocuSeal's Digest::UUID::OID_NAMESPACE. */
const OID_NAMESPACE = '6ba7b812-9dad-11d1-80b4-00c04fd430c8';

/**
 * Merges `names` (at least 2) into one role.
 * @param roles the submission's roles so far (not changed)
 * @param fields the submission's fields so far (not changed; fields it changes are copies)
 * @param names role names from the request
 * @param name the merged role's name, when the submitter gives one (`role`)
 * @returns the merged role and the new role and field lists
 * @throws AppError VALIDATION `<name> role doesn't exist`
 */
export function mergeRoles(
  roles: readonly Role[],
  fields: readonly Field[],
  names: readonly string[],
  name: string | undefined,
): { role: Role; roles: Role[]; fields: Field[] } {
  const selected = names.map((roleName) => {
    const role = roles.find((r) => r.name.toLowerCase() === roleName.trim().toLowerCase());
    if (!role) throw new AppError('VALIDATION', `${roleName} role doesn't exist`);
    return role;
  });
  const mergedUuids = new Set(selected.map((r) => r.uuid));
  const merged: Role = {
    uuid: uuidV5([...mergedUuids].sort().join(':'), OID_NAMESPACE),
    name: name?.trim() || selected.map((r) => r.name).join(' / '),
  };
  const newRoles: Role[] = [];
  for (const role of roles) {
    if (!mergedUuids.has(role.uuid)) newRoles.push(role);
    else if (!newRoles.includes(merged)) newRoles.push(merged);
  }

  const order = roles.map((r) => r.uuid);
  const byName = new Map<string, Field>();
  const dropped = new Set<Field>();
  const replaced = new Map<Field, Field>();
  const inRoleOrder = [...fields].sort((a, b) => order.indexOf(a.submitter_uuid) - order.indexOf(b.submitter_uuid));
  for (const field of inRoleOrder) {
    if (!mergedUuids.has(field.submitter_uuid)) continue;
    const earlier = field.name ? byName.get(field.name) : undefined;
    if (earlier) {
      earlier.areas = [...earlier.areas, ...field.areas];
      dropped.add(field);
      continue;
    }
    const copy: Field = { ...structuredClone(field), submitter_uuid: merged.uuid };
    replaced.set(field, copy);
    if (field.name) byName.set(field.name, copy);
  }
  const newFields = fields.filter((f) => !dropped.has(f)).map((f) => replaced.get(f) ?? f);
  return { role: merged, roles: newRoles, fields: newFields };
}
