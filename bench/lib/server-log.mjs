// What the api wrote to its log during a run, for the notes of the report.

import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** Counts the server's log lines by level and its POST answers by status. */
export async function scanLog(file) {
  const summary = { lines: 0, levels: {}, postStatuses: {}, firstProblem: undefined, notJson: 0 };
  const bump = (map, key) => {
    map[key] = (map[key] ?? 0) + 1;
  };
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line === '') continue;
    summary.lines++;
    if (
      line.startsWith('{"level":30,') &&
      line.includes('"method":"POST"') &&
      line.includes('"status":200,')
    ) {
      bump(summary.levels, 30);
      bump(summary.postStatuses, 200);
      continue;
    }
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      summary.notJson++;
      summary.firstProblem ??= line.slice(0, 300);
      continue;
    }
    bump(summary.levels, entry.level);
    if (entry.msg === 'request' && entry.method === 'POST') bump(summary.postStatuses, entry.status);
    if (entry.level >= 40 && summary.firstProblem === undefined) {
      summary.firstProblem = `${entry.msg}${entry.err?.message ? `: ${entry.err.message}` : ''}`.slice(
        0,
        300,
      );
    }
  }
  return summary;
}
