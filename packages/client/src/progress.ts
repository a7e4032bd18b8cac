import { Presets, SingleBar } from 'cli-progress';

/** A progress display: a bar with rate and time left when the total is known, a counter otherwise. */
export type Progress = {
  update(done: number): void;
  /** Shown beside the figures, e.g. that the server's rate limit holds things back. */
  note(text: string): void;
  stop(): void;
};

const SILENT: Progress = { update() {}, note() {}, stop() {} };

/**
 * A progress bar on `stream` when it is a terminal, nothing at all otherwise (piped, redirected):
 * `unit` names what is counted ("lines", "plants").
 */
export function progress(stream: NodeJS.WriteStream, unit: string, total?: number): Progress {
  if (!stream.isTTY) return SILENT;
  const figures = `{value}${total === undefined ? '' : '/{total}'} ${unit} | {rate}/s`;
  const bar = new SingleBar(
    {
      stream,
      format:
        total === undefined
          ? `${figures} {note}`
          : `{bar} {percentage}% | ${figures} | {eta_formatted} left {note}`,
      hideCursor: true,
      etaBuffer: 100,
      fps: 10,
    },
    Presets.shades_classic,
  );
  const started = performance.now();
  bar.start(total ?? 0, 0, { rate: 0, note: '' });
  return {
    update(done) {
      const seconds = (performance.now() - started) / 1000;
      // Progress again: whatever held it back is over.
      bar.update(done, { rate: seconds > 0 ? Math.round(done / seconds) : 0, note: '' });
    },
    note(text) {
      bar.update({ note: text });
    },
    stop() {
      bar.stop();
    },
  };
}
