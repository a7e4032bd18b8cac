// The rows a run left in its SQLite file, to check that every acknowledged create is stored.

import Database from 'better-sqlite3';

/** Counts the plants in `file`, less the `prefilled` ones that were there before the run. */
export function sqliteRowCounter(file, prefilled = 0) {
  return async () => {
    const db = new Database(file, { readonly: true });
    try {
      return Number(db.prepare('SELECT count(*) AS n FROM plants').get().n) - prefilled;
    } finally {
      db.close();
    }
  };
}
