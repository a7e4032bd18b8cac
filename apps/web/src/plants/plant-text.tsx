import { PLANT_FIELD_NAMES, PLANT_FIELDS, type PlantWithId } from '@plant-store/schema';
import { Fragment, type ReactNode } from 'react';
import { UserText } from '../user-text.tsx';
import type { PlantChange } from './plant-edit.ts';

/** The change in words: "name “Fern”, tag removed". */
export function describeChange(change: PlantChange): ReactNode {
  const parts = PLANT_FIELD_NAMES.filter((name) => change[name] !== undefined).map((name, i) => {
    const value = change[name];
    return (
      <Fragment key={name}>
        {i > 0 && ', '}
        {typeof value === 'string' ? (
          <>
            {name} “<UserText>{value}</UserText>”
          </>
        ) : (
          `${name} removed`
        )}
      </Fragment>
    );
  });
  return <>{parts}</>;
}

const OPTIONAL = PLANT_FIELD_NAMES.filter((name) => !PLANT_FIELDS[name].required);

/** A plant in words: "“Fern” (tag “herb”)", or "“Fern” (no tag)": its name, then its optional fields. */
export function describePlant(plant: PlantWithId): ReactNode {
  const parts = OPTIONAL.map((name, i) => {
    const value = plant[name];
    return (
      <Fragment key={name}>
        {i > 0 && ', '}
        {value === undefined ? (
          `no ${name}`
        ) : (
          <>
            {name} “<UserText>{value}</UserText>”
          </>
        )}
      </Fragment>
    );
  });
  return (
    <>
      “<UserText>{plant.name}</UserText>” ({parts})
    </>
  );
}
