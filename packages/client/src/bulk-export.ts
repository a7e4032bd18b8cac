import type { Writable } from 'node:stream';
import { MAX_LIST_LIMIT } from '@plant-store/schema';
import { type Format, fileHeader, formatPlants } from './plant-file.ts';
import type { RestClient } from './rest.ts';

export type ExportOptions = {
  format: Format;
  /** `out` is a terminal: CSV's text shows the characters a terminal obeys escaped (`formatPlants`). */
  forTerminal?: boolean;
  /** Told the number of plants written so far, after each page. */
  onProgress?(written: number): void;
};

/**
 * Writes every plant to `out` in id order, one keyset page (`GET /plants?after=`) at a time. The
 * next page is read while this one is written, and a page is not read before `out` has taken the
 * one before it (backpressure): at most two pages are held, whatever the size of the store.
 * Each next page comes after the one before (`listPlants` checks it): no page is read twice.
 * Resolves to the number of plants written.
 */
export async function exportPlants(
  client: RestClient,
  out: Writable,
  { format, forTerminal, onProgress }: ExportOptions,
) {
  const page = (after?: bigint) => client.listPlants({ limit: MAX_LIST_LIMIT, after });
  let written = 0;
  await write(out, fileHeader(format));
  let next = page();
  for (;;) {
    const { plants, next: after } = await next;
    if (after !== undefined) {
      next = page(after);
      // Seen when awaited; a write failing first must not leave it reported as unhandled.
      next.catch(() => undefined);
    }
    await write(out, formatPlants(plants, format, { forTerminal }));
    written += plants.length;
    onProgress?.(written);
    if (after === undefined) return written;
  }
}

/** Writes `text`, resolving once `out` wants more (at once unless its buffer is full). */
function write(out: Writable, text: string): Promise<void> {
  if (text === '') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    out.once('error', onError);
    const more = out.write(text, (error) => {
      if (error) reject(error);
    });
    const done = () => {
      out.off('error', onError);
      resolve();
    };
    if (more) done();
    else out.once('drain', done);
  });
}
