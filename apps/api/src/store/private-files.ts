import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Makes an SQLite database's files private to the service's user before SQLite opens them: the
 * directory is created 0700 when missing, the database file is created (empty: a valid new
 * database) or kept at 0600, and existing `-wal` and `-shm` files too. SQLite creates its `-wal`
 * and `-shm` files with the database file's permissions, so they follow.
 */
export function makePrivate(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}
