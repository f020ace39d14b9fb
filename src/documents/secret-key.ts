/**
 * The secret that signs file URLs (and anything else that needs a server-side key).
 *
 * Several instances behind one load balancer must share it: a URL minted by one instance is
 * verified by whichever instance serves it. Set SECRET_KEY_BASE to the same value on every
 * instance, or give them one shared DATA_DIR. Changing it invalidates every URL already handed out.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.ts';

/** File under DATA_DIR holding the generated secret when SECRET_KEY_BASE is not set. */
export const SECRET_KEY_BASE_FILE = 'secret_key_base';

/** Shortest secret accepted from the file (SECRET_KEY_BASE itself is checked by config: 32). */
const MIN_LENGTH = 32;

/**
 * `config.secretKeyBase` when set; otherwise the contents of `<DATA_DIR>/secret_key_base`,
 * creating it on first use: 64 random bytes as 128 hex characters, file mode 0600.
 * Creation is atomic (a complete temporary file is hard-linked into place), so instances starting
 * together on one DATA_DIR all end up with the same secret.
 * @throws Error when the file exists but holds fewer than 32 characters (it is not overwritten:
 *   that would silently invalidate every URL signed with it)
 */
export async function resolveSecretKeyBase(config: Pick<Config, 'secretKeyBase' | 'dataDir'>): Promise<string> {
  if (config.secretKeyBase) return config.secretKeyBase;
  const file = path.join(config.dataDir, SECRET_KEY_BASE_FILE);
  const existing = await readSecret(file);
  if (existing !== undefined) return existing;

  await fs.mkdir(config.dataDir, { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const content = `${randomBytes(64).toString('hex')}\n`;
  await fs.writeFile(temporary, content, { mode: 0o600, flag: 'wx' });
  try {
    await fs.chmod(temporary, 0o600); // in case the umask took bits away from the owner
    await fs.link(temporary, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // EEXIST: another process created it first; use theirs.
    if (code && ['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(code)) {
      // No hard links on this file system: exclusive create, still never overwriting.
      await fs.writeFile(file, content, { mode: 0o600, flag: 'wx' }).catch((fallback: NodeJS.ErrnoException) => {
        if (fallback.code !== 'EEXIST') throw fallback;
      });
    } else if (code !== 'EEXIST') {
      throw error;
    }
  } finally {
    await fs.rm(temporary, { force: true });
  }
  const created = await readSecret(file);
  if (created === undefined) throw new Error(`${file} disappeared while it was being created`);
  return created;
}

async function readSecret(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const secret = text.trim();
  if (secret.length < MIN_LENGTH) {
    throw new Error(
      `${file} holds no usable secret (fewer than ${MIN_LENGTH} characters): fix or delete it, or set SECRET_KEY_BASE`,
    );
  }
  return secret;
}
