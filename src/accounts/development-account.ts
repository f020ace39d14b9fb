/**
 * The development account: on the very first start (no account in the database) the service
 * creates one so that a new user can call the API at once.
 */
import type { Db } from '../db/client.ts';
import { lockFirstStart } from '../db/queries/advisory-locks.ts';
import { CreateAccountInput, insertAccount, type CreatedAccount } from './create-account.ts';

export const DEVELOPMENT_ACCOUNT = {
  name: 'Development',
  email: 'dev@signet.local',
  firstName: 'Dev',
  lastName: 'User',
} as const;

/**
 * Creates the development account when the database has no account yet.
 * @returns the new account with its API key (to print once), or null when accounts exist
 */
export async function ensureDevelopmentAccount(db: Db): Promise<CreatedAccount | null> {
  return db.$transaction(async (tx) => {
    await lockFirstStart(tx);
    if ((await tx.account.count()) > 0) return null;
    return insertAccount(tx, CreateAccountInput.parse(DEVELOPMENT_ACCOUNT));
  });
}

/**
 * The development account's user (DEVELOPMENT_ACCOUNT.email), while it and its account are not
 * archived: on a restart the banner names it, so that a lost development key can be replaced
 * (`signet api-key create --user-id <id>`).
 * @returns its user and account ids, or null
 */
export async function findDevelopmentUser(db: Db): Promise<{ userId: number; accountId: number } | null> {
  const user = await db.user.findFirst({
    where: { email: DEVELOPMENT_ACCOUNT.email, archivedAt: null, account: { archivedAt: null } },
    select: { id: true, accountId: true },
  });
  return user ? { userId: user.id, accountId: user.accountId } : null;
}
