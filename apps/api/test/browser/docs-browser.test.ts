import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startInProcess } from '../support/in-process.ts';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const TOKEN = 'docs-browser-token';
const RESULTS = new URL('../../test-results/', import.meta.url).pathname;

type Document = {
  paths: Record<string, Record<string, { operationId: string; tags?: string[] }>>;
  components: { schemas: Record<string, unknown> };
};

let api: RunningApi;
let profile: string;
let browser: BrowserContext;
let page: Page;
/** What went wrong in the browser while the page was in use: should stay empty. */
const problems: string[] = [];
/** Every URL the browser requested. */
const requested: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  api = await startInProcess({ token: TOKEN });
  profile = mkdtempSync(join(tmpdir(), 'plant-store-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  // Nothing may leave this machine's api: any other request is recorded, then refused.
  await browser.route('**/*', (route) =>
    new URL(route.request().url()).origin === api.url ? route.fallback() : route.abort('blockedbyclient'),
  );
  browser.on('request', (request) => requested.push(request.url()));
  browser.on('requestfailed', (request) =>
    problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`),
  );
  browser.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`);
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning')
      problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  // Make every CSP violation a console error, whatever Chromium itself reports.
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await api?.stop();
  api?.cleanup();
});

describe('GET /docs in Chromium', () => {
  it('shows every operation and schema of /openapi.json, all loaded from the api itself', async () => {
    const response = await page.goto(`${api.url}/docs`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).not.toMatch(/unsafe-(eval|inline)/);
    await page.locator('.opblock').first().waitFor();
    const doc = (await (await fetch(`${api.url}/openapi.json`)).json()) as Document;

    const post = page.locator('#operations-plants-addPlant .opblock-summary');
    await post.waitFor({ state: 'visible' });
    expect(await post.locator('.opblock-summary-method').textContent()).toBe('POST');
    expect(await post.locator('.opblock-summary-path').textContent()).toBe('/plants');
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, { operationId, tags }] of Object.entries(operations)) {
        const summary = page.locator(`#operations-${tags?.[0] ?? 'default'}-${operationId} .opblock-summary`);
        expect(await summary.locator('.opblock-summary-method').textContent()).toBe(method.toUpperCase());
        expect(await summary.locator('.opblock-summary-path').getAttribute('data-path')).toBe(path);
      }
    }
    const schemas = page.locator('.models [data-json-schema-level="0"] > .json-schema-2020-12-head');
    const titles = await schemas.locator('.json-schema-2020-12__title').allTextContents();
    expect(titles.sort()).toEqual(Object.keys(doc.components.schemas).sort());
    const newPlant = schemas.filter({ hasText: 'NewPlant' });
    await newPlant.locator('.json-schema-2020-12-expand-deep-button').click();
    await expect
      .poll(() => page.locator('.models').textContent())
      .toContain('Identification number of the plant');
    expect(await page.locator('.models').textContent()).toContain('int64');
    await page.locator('button.authorize').waitFor();

    expect(problems).toEqual([]);
    expect(requested.length).toBeGreaterThan(0);
    expect(requested.filter((url) => new URL(url).origin !== api.url)).toEqual([]);
  });

  it('creates and reads a plant from "Try it out" with a pasted bearer token, ids exact', async () => {
    await page.locator('button.authorize').click();
    await page.locator('#auth-bearer-value').fill(TOKEN);
    await page.locator('.auth-btn-wrapper button.authorize').click();
    await page.locator('.auth-btn-wrapper button.btn-done').click();

    const operation = page.locator('#operations-plants-addPlant');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation
      .locator('textarea.body-param__text')
      .fill('{"id": 9007199254740993, "name": "Docs Fern", "tag": "from-docs"}');
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status');
    await expect.poll(() => status.textContent(), { timeout: 10_000 }).toBe('200');

    // The store has it, id and all (2^53 + 1: no digit lost on the way).
    const stored = await fetch(`${api.url}/plants/9007199254740993`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(stored.status).toBe(200);
    const storedText = await stored.text();
    expect(storedText).toMatch(
      /^\{"id":9007199254740993,"name":"Docs Fern","tag":"from-docs","version":[1-9][0-9]*\}$/,
    );

    // Reading it back from the page shows the id as stored, not rounded by JSON.parse.
    const get = page.locator('#operations-plants-getPlant');
    await get.locator('.opblock-summary').click();
    await get.locator('button.try-out__btn').click();
    await get.locator('tr[data-param-name="id"] input').fill('9007199254740993');
    await get.locator('button.execute').click();
    const body = get.locator('.live-responses-table .response .response-col_description pre').first();
    await expect.poll(() => body.textContent(), { timeout: 10_000 }).toBe(storedText);

    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: join(RESULTS, 'docs-try-it.png'), fullPage: true });
    expect(problems).toEqual([]);
    expect(requested.filter((url) => new URL(url).origin !== api.url)).toEqual([]);
  });
});
