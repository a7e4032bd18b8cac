import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';

/** While exports fail, at most one warning per this long. */
export const WARN_INTERVAL_MS = 60_000;

/** Told the outcome of each export: its result and how many spans it carried. */
export type ExportReport = (result: ExportResult, spans: number) => void;

/** `exporter`, each export's result also handed to `report`. */
export function watchedExporter(exporter: SpanExporter, report: ExportReport): SpanExporter {
  return {
    export(spans, resultCallback) {
      exporter.export(spans, (result) => {
        report(result, spans.length);
        resultCallback(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Exports as an operator needs to hear of them: while they fail (the collector refuses
 * connections, never answers, or answers an error), a `warn` line at most every `intervalMs`,
 * with the spans dropped since the last line and why; once one succeeds again, an `info` line with
 * those dropped meanwhile. `collector` names it by its origin only: its URL may carry credentials.
 */
export function exportLog(
  log: Logger,
  collector: string,
  { intervalMs = WARN_INTERVAL_MS, now = () => performance.now() } = {},
): ExportReport {
  // Spans dropped that no line has counted yet, and whether exports have failed since the last success.
  let dropped = 0;
  let failing = false;
  let warnedAt = Number.NEGATIVE_INFINITY;
  return (result, spans) => {
    if (result.code === ExportResultCode.SUCCESS) {
      if (failing) log.info({ collector, dropped }, 'tracing: the collector takes spans again');
      failing = false;
      dropped = 0;
      return;
    }
    failing = true;
    dropped += spans;
    if (now() - warnedAt < intervalMs) return;
    warnedAt = now();
    log.warn({ collector, dropped, reason: describe(result.error) }, 'tracing: spans dropped');
    dropped = 0;
  };
}

/** Why an export failed, in the exporter's words: a network error's, or the collector's status. */
function describe(error: Error | undefined): string {
  const status = (error as { code?: unknown } | undefined)?.code;
  if (typeof status === 'number') return `the collector answered ${status}`;
  return error?.message ?? 'the export failed';
}
