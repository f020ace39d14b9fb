/**
 * `GET /api/user`: the key's user as `{id, first_name, last_name, email}`
 * (reference/docuseal-behaviour.md §1; the shape is src/docuseal-shapes/user.ts's).
 */
import { serializeUser, type UserData } from '../../src/docuseal-shapes/user.ts';
import type { RestRoute } from '../gateway.ts';

interface Data {
  viewer: { user: UserData };
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
    serialize: ({ viewer: { user } }) => serializeUser(user),
  },
];
