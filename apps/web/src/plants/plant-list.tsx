import { PLANT_FIELD_NAMES, PLANT_FIELDS, type PlantWithId } from '@plant-store/schema';
import { type ReactNode, useEffect, useRef } from 'react';
import { describeFailure } from '../failure.ts';
import { UserText } from '../user-text.tsx';
import type { PlantFilter } from './list-query.ts';
import type { usePlants } from './use-plants.ts';

type Props = {
  plants: ReturnType<typeof usePlants>;
  /** The filter as typed (the list follows it once typing pauses). */
  filter: PlantFilter;
  onFilter(filter: PlantFilter): void;
  onEdit(plant: PlantWithId): void;
  onDelete(plant: PlantWithId): void;
  headingRef: React.RefObject<HTMLHeadingElement | null>;
};

/**
 * The plants in id order, a page at a time: the next page loads when the end of the table scrolls
 * into view, or with `Load more`. Ids are shown as the api sent them (bigint, every digit). The
 * filters are the api's (each page holds only matches), so each page loaded is full.
 */
export function PlantList({ plants, filter, onFilter, onEdit, onDelete, headingRef }: Props) {
  const { list } = plants;
  const loaded = plants.plants.length;
  const more = list.hasNextPage;
  const end = useRef<HTMLDivElement>(null);
  const canLoad = more && !list.isFetching && !list.isError;
  const { fetchNextPage } = list;

  // While the end of the table is in view, load the next page: observed anew after each page, so a
  // page that does not fill the screen (or a filter that hides most of it) loads the next one too.
  useEffect(() => {
    const element = end.current;
    if (!canLoad || element === null) return;
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((entry) => entry.isIntersecting)) void fetchNextPage();
      },
      { rootMargin: '200px' },
    );
    observer.observe(element);
    return () => observer.disconnect();
  }, [canLoad, fetchNextPage]);

  const failure = list.isError ? describeFailure(list.error) : undefined;
  const filterField = (label: string, key: keyof PlantFilter) => (
    <label className="filter">
      {label}{' '}
      <input
        type="search"
        value={filter[key]}
        onChange={(event) => onFilter({ ...filter, [key]: event.target.value })}
        spellCheck={false}
        dir="auto"
      />
    </label>
  );
  return (
    <section aria-labelledby="plants-heading" className="plants">
      <div className="plants-header">
        <h2 id="plants-heading" ref={headingRef} tabIndex={-1}>
          Plants
        </h2>
        <div className="filters">
          {filterField('Filter by tag', 'tag')}
          {filterField('Name starts with', 'namePrefix')}
        </div>
      </div>
      <table>
        <caption className="visually-hidden">Plants in id order</caption>
        <thead>
          <tr>
            <th scope="col">ID</th>
            {PLANT_FIELD_NAMES.map((name) => (
              <th key={name} scope="col">
                {PLANT_FIELDS[name].label}
              </th>
            ))}
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {plants.plants.map((plant) => (
            <tr key={String(plant.id)}>
              <td className="id">{String(plant.id)}</td>
              {PLANT_FIELD_NAMES.map((name) => (
                <td key={name}>{plant[name] !== undefined && <UserText>{plant[name]}</UserText>}</td>
              ))}
              <td>
                <button type="button" aria-label={`Edit plant ${plant.id}`} onClick={() => onEdit(plant)}>
                  Edit
                </button>{' '}
                <button type="button" aria-label={`Delete plant ${plant.id}`} onClick={() => onDelete(plant)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
          {plants.plants.length === 0 && (
            <tr>
              <td colSpan={4} className="empty">
                {emptyMessage({
                  pending: list.isPending,
                  failed: failure !== undefined,
                  filter: plants.filter,
                })}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div ref={end} />
      {failure !== undefined && (
        <p role="alert" className="error">
          The plants could not be listed: <UserText>{failure.message}</UserText>
        </p>
      )}
      <p className="list-footer">
        <span>
          {loaded} {loaded === 1 ? 'plant' : 'plants'} loaded{more ? ', more in the store' : ''}.
        </span>
        {more && (
          <button type="button" onClick={() => void fetchNextPage()} disabled={list.isFetchingNextPage}>
            {list.isFetchingNextPage ? 'Loading…' : 'Load more'}
          </button>
        )}
      </p>
    </section>
  );
}

function emptyMessage(state: { pending: boolean; failed: boolean; filter: PlantFilter }): ReactNode {
  if (state.pending) return 'Loading plants…';
  if (state.failed) return 'No plants to show.';
  const { tag, namePrefix } = state.filter;
  if (tag === '' && namePrefix === '') return 'The store holds no plants yet. Add one above.';
  return (
    <>
      No plant has{' '}
      {tag !== '' && (
        <>
          the tag “<UserText>{tag}</UserText>”
        </>
      )}
      {tag !== '' && namePrefix !== '' && ' and '}
      {namePrefix !== '' && (
        <>
          a name starting with “<UserText>{namePrefix}</UserText>”
        </>
      )}
      .
    </>
  );
}
