// Roundings and number formats shared by the harness (progress lines, targets) and the report.

const rounder = (scale) => (v) =>
  typeof v === 'number' && Number.isFinite(v) ? Math.round(v * scale) / scale : null;
export const round1 = rounder(10);
export const round2 = rounder(100);
export const round3 = rounder(1000);

/** kB (as /proc reports) → MB, one decimal. */
export function mb(kb) {
  return Number.isFinite(kb) ? round1(kb / 1024) : null;
}

export function fmtInt(v) {
  return typeof v === 'number' ? Math.round(v).toLocaleString('en-US') : 'n/a';
}
export function fmtMs(v) {
  return typeof v === 'number' ? v.toFixed(2) : 'n/a';
}
export function fmtRatio(v) {
  return typeof v === 'number' ? `${v.toFixed(2)}×` : 'n/a';
}
export function fmtNum(v) {
  return typeof v === 'number' ? String(v) : 'n/a';
}
export function fmtPct(v) {
  return typeof v === 'number' ? `${Math.round(v * 100)}%` : 'n/a';
}
/** 100000 → "100k", 1000000 → "1M". */
export function fmtCount(n) {
  return n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n);
}
