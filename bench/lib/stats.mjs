// Small statistics for the bench: medians of runs and the RSS trend of the soak.

export function median(values) {
  const sorted = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export function max(values) {
  const finite = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
  return finite.length === 0 ? null : Math.max(...finite);
}

export function sum(values) {
  return values.reduce((total, v) => total + (typeof v === 'number' && Number.isFinite(v) ? v : 0), 0);
}

/** Least-squares slope of y over x; null with fewer than 3 points. */
export function slope(points) {
  if (points.length < 3) return null;
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? null : num / den;
}

export function ratio(a, b) {
  return typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : null;
}

/** Rotates a list by `by` places, so interleaved rounds do not always run scenarios in one order. */
export function rotate(list, by) {
  if (list.length === 0) return list;
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}
