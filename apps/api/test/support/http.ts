import { configuredTokenName } from '../../src/auth/tokens.ts';

/** A raw HTTP answer, read whole. */
export type Answer = { status: number; headers: Headers; text: string; json: unknown };

export const TOKEN = 'plant-store-test-token';
/** The name `TOKEN` takes in API_TOKENS: derived from its digest (`configuredTokenName`). */
export const TOKEN_NAME = configuredTokenName(TOKEN);
export const JSON_HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

/** Sends one request over real HTTP with a raw string body and reads the whole answer. */
export async function send(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const res = await fetch(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** POST /plants with the test token and a JSON content type unless overridden. */
export function postPlant(baseUrl: string, body: string, headers: Record<string, string> = JSON_HEADERS) {
  return send(`${baseUrl}/plants`, { method: 'POST', headers, body });
}

/** The exact body the api sends for an error. */
export function errorBody(status: number, message: string): string {
  return JSON.stringify({ error: status, message });
}
