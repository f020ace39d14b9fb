/**
 * `GET /api/user`: the key's user as `{id, first_name, last_name, email}`
 * (reference/docuseal-behaviour.md §1).
 */
import type { RestRoute } from '../gateway.ts';

interface Data {
  viewer: { user: { id: number; email: string; firstName: string | null; lastName: string | null } };
}

export const userRoutes: RestRoute<Data>[] = [
  {
    method: 'GET',
    path: '/user',
    operation: /* GraphQL */ `
      query RestUser {
        viewer { user { id email firstName lastName } }
      }
    `,
    serialize: ({ viewer: { user } }) => ({
      id: user.id,
      first_name: user.firstName,
      last_name: user.lastName,
      email: user.email,
    }),
  },
];
