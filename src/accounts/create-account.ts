/**
 * Creating an account with its first user and an API key for that user.
 */
import { z } from 'zod';
import type { Db } from '../db/client.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';
import { MAX_LENGTH } from '../limits.ts';
import { generateApiKey, parseInput } from './api-keys.ts';

/** Sizes: src/limits.ts. */
export const CreateAccountInput = z.object({
  name: z.string().trim().min(1, 'name is required').max(MAX_LENGTH.name),
  email: z.string().trim().max(MAX_LENGTH.email).toLowerCase().pipe(z.email('email is invalid')),
  firstName: z.string().trim().max(MAX_LENGTH.name).optional(),
  lastName: z.string().trim().max(MAX_LENGTH.name).optional(),
});

export interface CreatedAccount {
  accountId: number;
  userId: number;
  apiKeyId: number;
  /** Shown once; only its SHA-256 is stored. */
  apiKey: string;
}

/**
 * Creates an account, its admin user and an API key, in one transaction (nothing is
 * half-created on failure).
 * @throws AppError VALIDATION for a missing name, an invalid email or an email already taken
 */
export async function createAccount(db: Db, input: z.input<typeof CreateAccountInput>): Promise<CreatedAccount> {
  const parsed = parseInput(CreateAccountInput, input);
  return db.$transaction((tx) => insertAccount(tx, parsed));
}

/**
 * The writes of createAccount inside a caller's transaction.
 * @throws AppError VALIDATION when the email is already taken
 */
export async function insertAccount(
  tx: Prisma.TransactionClient,
  input: z.output<typeof CreateAccountInput>,
): Promise<CreatedAccount> {
  const { name, email, firstName, lastName } = input;
  const { token, tokenHash, prefix } = generateApiKey();
  try {
    const account = await tx.account.create({ data: { name }, select: { id: true } });
    const user = await tx.user.create({
      data: { accountId: account.id, email, firstName: firstName ?? null, lastName: lastName ?? null },
      select: { id: true },
    });
    const key = await tx.apiKey.create({
      data: { accountId: account.id, userId: user.id, prefix, tokenHash },
      select: { id: true },
    });
    return { accountId: account.id, userId: user.id, apiKeyId: key.id, apiKey: token };
  } catch (error) {
    if ((error as { code?: string }).code === 'P2002') {
      throw new AppError('VALIDATION', 'email has already been taken', { cause: error });
    }
    throw error;
  }
}
