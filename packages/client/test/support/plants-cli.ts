import { execFile, spawn } from 'node:child_process';

export const BIN = new URL('../../bin/plants.js', import.meta.url).pathname;

/** What a run of the `plants` bin showed: exit code, and everything it wrote. */
export type Run = { code: number | null; stdout: string; stderr: string };

/**
 * Runs the `plants` bin as a user's shell would, with `env` as its whole environment (besides
 * PATH; a variable set to `undefined` is left out) and `input` on its stdin.
 */
export function runPlants(args: string[], env: Record<string, string | undefined>, input = ''): Promise<Run> {
  const merged = Object.fromEntries(
    Object.entries({ PATH: process.env.PATH ?? '', ...env }).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      { env: merged, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}

/**
 * Runs the `plants` bin under a pseudo-terminal (util-linux `script`), so its stdout and stderr
 * are a terminal: resolves to its exit code and what the terminal showed.
 */
export function runPlantsOnTerminal(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; screen: string }> {
  const quote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  // stdin is /dev/null: `script` forwards its stdin to the terminal, and on a pipe it keeps waiting
  // for more after the command exits.
  const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm', COLUMNS: '120', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let screen = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, screen })));
}
