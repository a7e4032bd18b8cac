import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningApi } from './in-process.ts';

/** One pino line as the api writes it. */
export type LogLine = { level: number; msg: string; [key: string]: unknown };

/** The api's log lines whose `msg` is `msg`, parsed. */
export const logLines = (api: Pick<RunningApi, 'logs'>, msg: string): LogLine[] =>
  api.logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.msg === msg);

/** Resolves with the api's log lines `msg` once there are `count` of them. */
export async function waitForLogs(
  api: Pick<RunningApi, 'logs'>,
  msg: string,
  count = 1,
  timeoutMs = 10_000,
): Promise<LogLine[]> {
  const deadline = performance.now() + timeoutMs;
  while (logLines(api, msg).length < count) {
    if (performance.now() > deadline) throw new Error(`no ${count} "${msg}" lines in ${api.logs.join('\n')}`);
    await sleep(20);
  }
  return logLines(api, msg);
}
