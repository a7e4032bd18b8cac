// Medians, ratios and roundings of the harness, and the number formats of the report.

const finite = (values) => values.filter((v) => typeof v === 'number' && Number.isFinite(v));

export function median(values) {
  const sorted = finite(values).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export const max = (values) => (finite(values).length ? Math.max(...finite(values)) : null);
export const sum = (values) => finite(values).reduce((total, v) => total + v, 0);
export const ratio = (a, b) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : null);

/** The list rotated by `by` places, so that interleaved rounds do not always run in one order. */
export function rotate(list, by) {
  const k = list.length === 0 ? 0 : by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

const rounder = (scale) => (v) =>
  typeof v === 'number' && Number.isFinite(v) ? Math.round(v * scale) / scale : null;
export const round1 = rounder(10);
export const round2 = rounder(100);

/** The `q` quantile of the ascending `sorted` (q = 1: its last), to 0.01. */
export const quantile = (sorted, q) =>
  round2(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
/** p50, p99 and max of the ascending `sorted`. */
export const percentiles = (sorted) => ({
  p50: quantile(sorted, 0.5),
  p99: quantile(sorted, 0.99),
  max: quantile(sorted, 1),
});

const known = (v) => typeof v === 'number' && Number.isFinite(v);
export const fmtInt = (v) => (known(v) ? Math.round(v).toLocaleString('en-US') : 'n/a');
export const fmtMs = (v) => (known(v) ? v.toFixed(2) : 'n/a');
export const fmtRatio = (v) => (known(v) ? `${v.toFixed(2)}×` : 'n/a');
export const fmtNum = (v) => (known(v) ? String(v) : 'n/a');
export const fmtPct = (v) => (known(v) ? `${Math.round(v * 100)}%` : 'n/a');
/** 100000 → "100k", 1000000 → "1M". */
export const fmtCount = (n) =>
  n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n);

/** A Markdown table. */
export function table(head, rows) {
  const line = (cells) => `| ${cells.map((cell) => String(cell ?? '').replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line), ''].join('\n');
}

/** A target of the report: PASS, FAIL, or n/a when `pass` is null. */
export const target = (what, figure, pass) => ({
  target: what,
  figure,
  result: pass === null || pass === undefined ? 'n/a' : pass ? 'PASS' : 'FAIL',
});

/** A target that a ratio reach `min`: "what ≥ min×". */
export const atLeast = (what, value, min) =>
  target(`${what} ≥ ${min}×`, fmtRatio(value), typeof value === 'number' ? value >= min : null);
