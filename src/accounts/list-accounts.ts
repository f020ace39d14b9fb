/**
 * Accounts and users as the operator's CLI lists them (`signet account list`, `signet user list`):
 * enough to find whom a new API key is for (a lost development key is replaced with
 * `signet api-key create --user-id N`). Never a secret: keys are listed by `signet api-key list`,
 * by prefix only.
 */
import type { Db } from '../db/client.ts';

/** An account as listed: `archivedAt` null while active. */
export interface AccountSummary {
  id: number;
  name: string;
  testing: boolean;
  createdAt: Date;
  archivedAt: Date | null;
  /** Users of the account, archived ones included. */
  userCount: number;
}

/** A user as listed: `archivedAt` null while active. */
export interface UserSummary {
  id: number;
  accountId: number;
  email: string;
  firstName: string | null;
  lastName: string | null;
  role: string;
  createdAt: Date;
  archivedAt: Date | null;
}

/** Every account, archived ones included, by ascending id. */
export async function listAccounts(db: Pick<Db, 'account'>): Promise<AccountSummary[]> {
  const accounts = await db.account.findMany({
    orderBy: { id: 'asc' },
    select: {
      id: true,
      name: true,
      testing: true,
      createdAt: true,
      archivedAt: true,
      _count: { select: { users: true } },
    },
  });
  return accounts.map(({ _count, ...account }) => ({ ...account, userCount: _count.users }));
}

/**
 * Every user, archived ones included, by ascending id; only those of `accountId` when given.
 * @param options.accountId an account id (an unknown one lists nothing)
 */
export function listUsers(db: Pick<Db, 'user'>, options: { accountId?: number } = {}): Promise<UserSummary[]> {
  return db.user.findMany({
    where: options.accountId === undefined ? {} : { accountId: options.accountId },
    orderBy: { id: 'asc' },
    select: {
      id: true,
      accountId: true,
      email: true,
      firstName: true,
      lastName: true,
      role: true,
      createdAt: true,
      archivedAt: true,
    },
  });
}
