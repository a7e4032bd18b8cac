/**
 * The bearer token, kept for this tab only: in memory and in `sessionStorage`, so a reload keeps
 * the user signed in while closing the tab forgets it. Never `localStorage`, a cookie or a URL:
 * those outlive the tab or travel with requests and into logs.
 */
const KEY = 'plant-store:token';

export function savedToken(): string | undefined {
  try {
    return sessionStorage.getItem(KEY) ?? undefined;
  } catch {
    // Storage refused (a privacy setting): the token lives in memory only.
    return undefined;
  }
}

export function saveToken(token: string): void {
  try {
    sessionStorage.setItem(KEY, token);
  } catch {
    // As above: memory only.
  }
}

export function forgetToken(): void {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // Nothing was kept.
  }
}
