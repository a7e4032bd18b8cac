import { ExportResultCode } from '@opentelemetry/core';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { exportLog, watchedExporter } from './export-watch.ts';

const COLLECTOR = 'http://127.0.0.1:4318';
const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4318'), { code: 'ECONNREFUSED' });
const failed = (error: Error = refused) => ({ code: ExportResultCode.FAILED, error });
const success = { code: ExportResultCode.SUCCESS };

/** `exportLog` on a clock the test moves, and the lines it logged (level, message, fields). */
function watch() {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { base: undefined, timestamp: false },
    { write: (line: string) => void lines.push(JSON.parse(line)) },
  );
  const clock = { now: 0 };
  const report = exportLog(log, COLLECTOR, { intervalMs: 60_000, now: () => clock.now });
  return { report, lines, clock };
}

describe('exportLog', () => {
  it('warns at once, then at most once a minute with the spans dropped since, and says when exports succeed again', () => {
    const { report, lines, clock } = watch();
    report(success, 5);
    expect(lines).toStrictEqual([]);

    report(failed(), 512);
    for (const at of [1_000, 30_000, 59_999]) {
      clock.now = at;
      report(failed(), 100);
    }
    clock.now = 60_000;
    report(failed(new Error('Request timed out')), 10);
    clock.now = 70_000;
    report(failed(), 7);
    report(success, 3);
    report(success, 3);
    expect(lines).toStrictEqual([
      {
        level: 40,
        collector: COLLECTOR,
        dropped: 512,
        reason: 'connect ECONNREFUSED 127.0.0.1:4318',
        msg: 'tracing: spans dropped',
      },
      {
        level: 40,
        collector: COLLECTOR,
        dropped: 310,
        reason: 'Request timed out',
        msg: 'tracing: spans dropped',
      },
      { level: 30, collector: COLLECTOR, dropped: 7, msg: 'tracing: the collector takes spans again' },
    ]);
  });

  it("gives a collector's error status as the reason, never its answer", () => {
    const { report, lines } = watch();
    const answered = Object.assign(new Error('Unauthorized'), { code: 401, data: 'token=abc' });
    report(failed(answered), 1);
    expect(lines).toStrictEqual([
      {
        level: 40,
        collector: COLLECTOR,
        dropped: 1,
        reason: 'the collector answered 401',
        msg: 'tracing: spans dropped',
      },
    ]);
  });
});

describe('watchedExporter', () => {
  it("hands each export's result to the report and to the caller", async () => {
    const reports: [number, number][] = [];
    const inner = new InMemorySpanExporter();
    const exporter = watchedExporter(inner, (result, spans) => reports.push([result.code, spans]));
    const results: number[] = [];
    const exportOnce = () =>
      new Promise<void>((resolve) =>
        exporter.export([], (result) => {
          results.push(result.code);
          resolve();
        }),
      );
    await exportOnce();
    await exporter.shutdown();
    await exportOnce();
    expect(results).toStrictEqual([ExportResultCode.SUCCESS, ExportResultCode.FAILED]);
    expect(reports).toStrictEqual([
      [ExportResultCode.SUCCESS, 0],
      [ExportResultCode.FAILED, 0],
    ]);
  });
});
