import type { PlantId, PlantWithId } from '@plant-store/schema';

/** One page of plants and the `after` of the page following it (`undefined`: the last page). */
export type Page = { plants: PlantWithId[]; next: PlantId | undefined };

/**
 * Why a page cannot be read on from: its next page must come after the plants it lists (the api's
 * `next` is the last one's id, or past it when a filtered page spent its scan budget, even on an
 * empty page) and after the `after` it was asked with, or a reader of every page would go on
 * forever. `undefined` when it does.
 */
export function nextPageProblem(
  plants: readonly PlantWithId[],
  next: PlantId,
  after: PlantId | undefined,
): string | undefined {
  const last = plants.at(-1)?.id;
  if (last === undefined && after !== undefined && next <= after)
    return `its next page (after=${next}) does not come after the after it was asked with (${after})`;
  if ((last !== undefined && next < last) || (after !== undefined && next <= after)) {
    return `its next page (after=${next}) does not come after the plants it lists`;
  }
  return undefined;
}

/** Every plant of the pages `readPage` answers, from the one after `after` to the last, a page at a time. */
export async function* everyPlant(
  readPage: (after: PlantId | undefined) => Promise<Page>,
  after?: PlantId,
): AsyncGenerator<PlantWithId, void, undefined> {
  let cursor = after;
  do {
    const page = await readPage(cursor);
    yield* page.plants;
    cursor = page.next;
  } while (cursor !== undefined);
}
