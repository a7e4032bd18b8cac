import type { PlantWithId } from '@plant-store/schema';
import type { ReactNode } from 'react';
import { UserText } from '../user-text.tsx';
import type { PlantChange } from './plant-edit.ts';

/** The change in words: "name “Fern”, tag removed". */
export function describeChange(change: PlantChange): ReactNode {
  const name = change.name !== undefined && (
    <>
      name “<UserText>{change.name}</UserText>”
    </>
  );
  const tag =
    change.tag === null
      ? 'tag removed'
      : change.tag !== undefined && (
          <>
            tag “<UserText>{change.tag}</UserText>”
          </>
        );
  return (
    <>
      {name}
      {name && tag && ', '}
      {tag}
    </>
  );
}

/** A plant in words: "“Fern” (tag “herb”)", or "“Fern” (no tag)". */
export function describePlant(plant: PlantWithId): ReactNode {
  return (
    <>
      “<UserText>{plant.name}</UserText>” (
      {plant.tag === undefined ? (
        'no tag'
      ) : (
        <>
          tag “<UserText>{plant.tag}</UserText>”
        </>
      )}
      )
    </>
  );
}
