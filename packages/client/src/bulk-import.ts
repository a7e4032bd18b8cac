import { type NewPlant, PLANT_FIELD_NAMES } from '@plant-store/schema';
import { PlantStoreError } from './errors.ts';
import type { Entry } from './plant-file.ts';
import { type PlantReplacement, replacementOf } from './trpc-batch.ts';

/** A line that was not imported, and why. */
export type Problem = { line: number; message: string };

/** What an import did, line by line. */
export type ImportSummary = {
  /** Plants created now. */
  created: number;
  /** Plants whose id the store already held, updated to what their line says (with `updateBatch`). */
  updated: number;
  /** Plants whose id the store already held (409), left as they were: what a re-run skips. */
  present: number;
  /** Lines that are no plant: refused here by `NewPlantSchema`, or by the server (400). */
  invalid: Problem[];
  /** Plants the server did not create for another reason (a 5xx, a 429 past every retry…). */
  failed: Problem[];
};

export type ImportOptions = {
  /** Creates plants in one request, settling each call on its own (a tRPC batch). */
  createBatch(plants: NewPlant[]): Promise<PromiseSettledResult<unknown>[]>;
  /**
   * Given: a plant whose id exists (409) is updated in one more request to what its line says
   * (every field; an optional one it lacks is removed), and counts as updated instead of already present.
   */
  updateBatch?(plants: PlantReplacement[]): Promise<PromiseSettledResult<unknown>[]>;
  /** Calls per batch. */
  batchSize: number;
  /** Bytes of one batch's request body, at most (roughly: see `encodedSize`). */
  batchBytes: number;
  /** Batches in flight at once. */
  concurrency: number;
  /** Told the number of lines done (imported or not) so far. */
  onProgress?(done: number): void;
};

/**
 * Creates the plants of `entries` (or, with `updateBatch`, updates those that exist) in batches, a bounded number in flight, reading the entries only
 * as fast as batches complete. Throws the `PlantStoreError` of a call that shows the import cannot
 * go on: no answer (status 0), or a token refused (401, 403).
 */
export async function importPlants(
  entries: AsyncIterable<Entry>,
  options: ImportOptions,
): Promise<ImportSummary> {
  const { createBatch, updateBatch, batchSize, batchBytes, concurrency, onProgress } = options;
  const summary: ImportSummary = { created: 0, updated: 0, present: 0, invalid: [], failed: [] };
  let done = 0;
  const progress = (lines: number) => {
    done += lines;
    onProgress?.(done);
  };

  /** Counts each call's outcome; resolves to the entries whose id exists (409). */
  const count = (
    batch: { line: number; plant: NewPlant }[],
    results: PromiseSettledResult<unknown>[],
    done: 'created' | 'updated',
  ) => {
    const conflicts: { line: number; plant: NewPlant }[] = [];
    results.forEach((result, i) => {
      const entry = batch[i]!;
      if (result.status === 'fulfilled') {
        summary[done]++;
        return;
      }
      const error = result.reason;
      if (!(error instanceof PlantStoreError) || [0, 401, 403].includes(error.status)) throw error;
      if (error.status === 409 && done === 'created') conflicts.push(entry);
      else if (error.status === 400)
        summary.invalid.push({ line: entry.line, message: error.serverMessage ?? error.message });
      // Without the server's message, the error's own says the call and the status.
      else
        summary.failed.push({
          line: entry.line,
          message:
            error.serverMessage === undefined ? error.message : `${error.status} ${error.serverMessage}`,
        });
    });
    return conflicts;
  };

  const send = async (batch: { line: number; plant: NewPlant }[]) => {
    const conflicts = count(batch, await createBatch(batch.map((entry) => entry.plant)), 'created');
    if (updateBatch === undefined || conflicts.length === 0) summary.present += conflicts.length;
    else {
      const replacements = conflicts.map(({ plant }) => replacementOf(plant));
      count(conflicts, await updateBatch(replacements), 'updated');
    }
    progress(batch.length);
  };

  const inFlight = new Set<Promise<void>>();
  const dispatch = async (batch: { line: number; plant: NewPlant }[]) => {
    const sending = send(batch).finally(() => inFlight.delete(sending));
    inFlight.add(sending);
    // Its failure is seen by the next race (or the final wait), not reported as unhandled.
    sending.catch(() => undefined);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  };

  let batch: { line: number; plant: NewPlant }[] = [];
  let bytes = 0;
  for await (const entry of entries) {
    if ('problem' in entry) {
      summary.invalid.push({ line: entry.line, message: entry.problem });
      progress(1);
      continue;
    }
    const size = encodedSize(entry.plant);
    if (batch.length > 0 && bytes + size > batchBytes) {
      await dispatch(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(entry);
    bytes += size;
    if (batch.length === batchSize) {
      await dispatch(batch);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) await dispatch(batch);
  await Promise.all(inFlight);
  // Lines in file order, whichever batch finished first.
  summary.invalid.sort((a, b) => a.line - b.line);
  summary.failed.sort((a, b) => a.line - b.line);
  return summary;
}

/**
 * An upper bound of the bytes one create adds to a batch body: its fields as JSON strings
 * (UTF-8, escapes included), plus the id and superjson's wrapping
 * (`"0":{"json":{"id":"…","name":…,"tag":…},"meta":{"values":{"id":["bigint"]},"v":1}},`).
 */
function encodedSize(plant: NewPlant): number {
  let size = 110;
  for (const name of PLANT_FIELD_NAMES) {
    const value = plant[name];
    // The member's name, quotes and separators, and its value.
    if (value !== undefined) size += name.length + 4 + Buffer.byteLength(JSON.stringify(value));
  }
  return size;
}
