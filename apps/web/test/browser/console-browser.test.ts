/**
 * The plant console in Chromium, against the built api (`dist/main.js` with the console in
 * `dist/app`, started as `pnpm start` starts it): what a person does with it, with the labels
 * they (and assistive technology) find things by. Needs `pnpm build` first (turbo runs it).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ApiProcess, runApiCommand, startApiProcess } from '@plant-store/api/testing';
import type { Browser, Page, Response as PageResponse } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type AxeViolation,
  launchChromium,
  openPage,
  runAxe,
  seriousOrCritical,
  type Watched,
} from '../support/browser.ts';

const TOKEN = 'console-browser-token-0123456789';
const RESULTS = new URL('../../test-results/', import.meta.url).pathname;
/** The interactive mark the app sets (src/app.tsx). */
const INTERACTIVE_MARK = 'plant-console:interactive';
/** How long a change by another client may take to show (issue 25). */
const LIVE_MS = 1_000;

let api: ApiProcess;
let browser: Browser;
const opened: Watched[] = [];
/** axe-core's findings per screen, for the report. */
const axeReport: Record<string, AxeViolation[]> = {};
/** Measured times, for the report (not asserted: the machine is shared). */
const timings: Record<string, number> = {};

beforeAll(async () => {
  mkdirSync(RESULTS, { recursive: true });
  // Issued tokens (and revocations) are seen within TOKEN_REFRESH_MS.
  api = await startApiProcess({ token: TOKEN, env: { TOKEN_REFRESH_MS: '200' } });
  browser = await launchChromium();
}, 60_000);

// Each test's pages go with it (their problems are kept for the last check).
afterEach(async () => {
  await Promise.all(opened.map((watched) => watched.context.close().catch(() => undefined)));
});

afterAll(async () => {
  writeFileSync(join(RESULTS, 'console-axe.json'), `${JSON.stringify(axeReport, null, 2)}\n`);
  writeFileSync(join(RESULTS, 'console-timings.json'), `${JSON.stringify(timings, null, 2)}\n`);
  console.log('console timings (ms):', timings);
  await browser?.close();
  await api?.stop();
  api?.cleanup();
});

async function newPage(options: { cache?: boolean } = {}): Promise<Watched> {
  const watched = await openPage(browser, api.url, options);
  opened.push(watched);
  return watched;
}

const consoleUrl = () => `${api.url}/app/`;

async function signIn(page: Page, token = TOKEN): Promise<void> {
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

async function openSignedIn(token = TOKEN): Promise<Watched> {
  const watched = await newPage();
  await watched.page.goto(consoleUrl());
  await signIn(watched.page, token);
  await watched.page.getByText('Live updates on').waitFor();
  return watched;
}

/** axe-core on the page as it is: kept for the report, and none serious or critical allowed. */
async function expectAccessible(page: Page, screen: string): Promise<void> {
  const violations = await runAxe(page);
  axeReport[screen] = violations;
  expect(seriousOrCritical(violations), screen).toEqual([]);
}

function rest(path: string, init: { method?: string; body?: string; token?: string } = {}) {
  return fetch(`${api.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${init.token ?? TOKEN}`,
      ...(init.body !== undefined && { 'content-type': 'application/json' }),
    },
    body: init.body,
  });
}

/** What a tRPC mutation sent, in superjson's JSON form (bigints as their digits). */
function sentInput(response: PageResponse): Record<string, unknown> {
  const body = JSON.parse(response.request().postData() ?? '{}') as Record<
    string,
    { json: Record<string, unknown> }
  >;
  return body['0']!.json;
}

const row = (page: Page, id: string) =>
  page.getByRole('row').filter({ has: page.getByRole('cell', { name: id, exact: true }) });

async function addPlant(page: Page, plant: { id: string; name: string; tag?: string }): Promise<void> {
  await page.getByLabel('ID', { exact: true }).fill(plant.id);
  await page.getByLabel('Name', { exact: true }).fill(plant.name);
  await page.getByLabel('Tag', { exact: true }).fill(plant.tag ?? '');
  await page.getByRole('button', { name: 'Add plant' }).click();
}

describe('the plant console in Chromium, on the built api', () => {
  it('opens on Sign in, served under a strict CSP, and is interactive (time measured)', async () => {
    const { page, requests, problems } = await newPage({ cache: true });
    const started = Date.now();
    const response = await page.goto(consoleUrl());
    await page.getByLabel('Token').waitFor();
    timings.coldNavigationToSignInVisible = Date.now() - started;
    expect(response?.status()).toBe(200);
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-|data:|\*/);
    // The first screen answers input: the app's own mark, in ms since navigation started.
    timings.coldInteractive = await interactiveAt(page);
    const loaded = requests.map((request) => new URL(request.url).pathname);
    expect(loaded).toContain('/app/');
    const script = loaded.find((path) => /^\/app\/assets\/index-[\w-]+\.js$/.test(path))!;
    expect(script).toBeDefined();

    // Again with the browser's cache: the page revalidated (304), the hashed files not even asked
    // for (the api's access log says what reached it).
    const before = api.logs.length;
    await page.reload();
    await page.getByLabel('Token').waitFor();
    timings.warmInteractive = await interactiveAt(page);
    // Access log lines arrive through a pipe: wait for the page's own, and a moment for any other.
    await expect
      .poll(() => api.logs.slice(before).some((line) => line.includes('"path":"/app/"')))
      .toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const served = api.logs
      .slice(before)
      .map((line) => JSON.parse(line) as { path?: string; status?: number })
      .filter((line) => line.path?.startsWith('/app/'));
    expect(served.map(({ path, status }) => ({ path, status }))).toContainEqual({
      path: '/app/',
      status: 304,
    });
    expect(served.filter((line) => line.path!.startsWith('/app/assets/'))).toEqual([]);

    const answer = await fetch(`${api.url}${script}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(answer.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    await expect.poll(() => page.getByRole('button', { name: 'Sign in' }).isEnabled()).toBe(true);
    await expectAccessible(page, 'sign in');
    expect(problems).toEqual([]);
  });

  it("shows the api's message for a wrong token, and keeps the token out of storage, cookies and URLs", async () => {
    const { page, requests, problems } = await newPage();
    await page.goto(consoleUrl());
    const wrong = 'not-a-token-of-this-api-0123456789';
    await page.getByLabel('Token').fill(wrong);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('The bearer token is not valid.');
    await expect.poll(() => page.getByLabel('Token').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page, 'sign in, wrong token');

    await signIn(page);
    const stored = await page.evaluate(() => ({
      session: { ...sessionStorage },
      local: localStorage.length,
      cookie: document.cookie,
      url: location.href,
    }));
    expect(stored).toEqual({
      session: { 'plant-store:token': TOKEN },
      local: 0,
      cookie: '',
      url: consoleUrl(),
    });
    const cookies = await page.context().cookies();
    expect(cookies).toEqual([]);
    const calls = requests.filter((request) => new URL(request.url).pathname.startsWith('/trpc/'));
    expect(calls.length).toBeGreaterThan(0);
    for (const { url, headers } of calls) {
      expect(url).not.toContain(TOKEN);
      expect(url).not.toContain(wrong);
      expect(headers.authorization).toMatch(/^Bearer (console-browser-token|not-a-token)/);
    }
    // The live events too: over fetch with the header, never a query parameter.
    expect(calls.some(({ url }) => url.includes('/trpc/plants.events'))).toBe(true);
    expect(problems).toEqual([]);
  });

  it('shows an empty store as such, and stays signed in across a reload of the tab', async () => {
    const { page, problems } = await openSignedIn();
    await expect
      .poll(() => page.getByRole('table').textContent())
      .toContain('The store holds no plants yet. Add one above.');
    await expectAccessible(page, 'plants, empty store');
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByText('The store holds no plants yet.').waitFor();
    expect(problems).toEqual([]);
  });

  it('adds a plant that a second page sees live, then deletes it after a confirmation', async () => {
    const first = await openSignedIn();
    const second = await openSignedIn();
    const id = '9007199254740993'; // 2^53 + 1: Number would show ...992

    const created = first.page.waitForResponse((response) => response.url().includes('/trpc/plants.create'));
    await addPlant(first.page, { id, name: 'Monstera deliciosa', tag: 'aroid' });
    expect((await created).status()).toBe(200);
    const createdAt = Date.now();
    await row(second.page, id).waitFor({ timeout: LIVE_MS });
    timings.liveCreateSeenByOtherPage = Date.now() - createdAt;
    await row(first.page, id).waitFor();
    expect(await row(second.page, id).getByRole('cell').allTextContents()).toEqual([
      id,
      'Monstera deliciosa',
      'aroid',
      'Edit Delete',
    ]);
    await expect
      .poll(() => first.page.getByRole('status').allTextContents())
      .toContain(`Added plant ${id} (Monstera deliciosa).`);
    const stored = await rest(`/plants/${id}`);
    const version = stored.headers.get('etag')!.replaceAll('"', '');
    expect(await stored.text()).toBe(
      `{"id":${id},"name":"Monstera deliciosa","tag":"aroid","version":${version}}`,
    );
    await expectAccessible(first.page, 'plants, with a row');

    // Delete asks first; Cancel keeps the plant.
    await row(first.page, id)
      .getByRole('button', { name: `Delete plant ${id}` })
      .click();
    const dialog = first.page.getByRole('dialog', { name: 'Delete plant?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(
      `“Monstera deliciosa” (id ${id}) will be deleted for everyone.`,
    );
    await expectAccessible(first.page, 'delete confirmation');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await rest(`/plants/${id}`)).status).toBe(200);

    await row(first.page, id)
      .getByRole('button', { name: `Delete plant ${id}` })
      .click();
    const deleted = first.page.waitForResponse((response) => response.url().includes('/trpc/plants.delete'));
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    expect((await deleted).status()).toBe(200);
    // For the version it showed.
    expect(sentInput(await deleted)).toMatchObject({ id, expectedVersion: version });
    const deletedAt = Date.now();
    await row(second.page, id).waitFor({ state: 'detached', timeout: LIVE_MS });
    timings.liveDeleteSeenByOtherPage = Date.now() - deletedAt;
    await row(first.page, id).waitFor({ state: 'detached' });
    expect((await rest(`/plants/${id}`)).status).toBe(404);
    expect([...first.problems, ...second.problems]).toEqual([]);
  });

  it('shows int64 ids beyond 2^53 exactly, both ways, to every page', async () => {
    const first = await openSignedIn();
    const second = await openSignedIn();
    const ids = ['9223372036854775807', '-9223372036854775808', '9007199254740993'];
    // Two from the form, one from another client (REST, exact JSON).
    await addPlant(first.page, { id: ids[0]!, name: 'Largest', tag: 'int64' });
    await row(first.page, ids[0]!).waitFor();
    await addPlant(first.page, { id: ids[1]!, name: 'Smallest', tag: 'int64' });
    await row(first.page, ids[1]!).waitFor();
    const posted = await rest('/plants', {
      method: 'POST',
      body: `{"id":${ids[2]},"name":"Beyond 2^53","tag":"int64"}`,
    });
    expect(posted.status).toBe(200);
    for (const page of [first.page, second.page]) {
      for (const id of ids) await row(page, id).waitFor();
    }
    for (const id of ids) {
      expect((await (await rest(`/plants/${id}`)).text()).startsWith(`{"id":${id},`)).toBe(true);
    }
    // In id order, every digit as stored.
    const shown = await second.page.getByRole('row').locator('td.id').allTextContents();
    expect(shown).toEqual([ids[1], ids[2], ids[0]]);
  });

  it("checks the form with the api's own messages before sending, and shows a 409 beside ID", async () => {
    const { page, requests } = await openSignedIn();
    const creates = () => requests.filter((request) => request.url.includes('/trpc/plants.create')).length;
    await page.getByRole('button', { name: 'Add plant' }).click();
    const idError = page.locator('#new-plant-id-error');
    await expect.poll(() => idError.textContent()).toBe('id is required');
    expect(await page.locator('#new-plant-name-error').textContent()).toBe('name is required');
    // Focus goes to the first field to fix, which says what is wrong with it.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('new-plant-id');
    expect(await page.getByLabel('ID', { exact: true }).getAttribute('aria-describedby')).toContain(
      'new-plant-id-error',
    );
    await page.getByLabel('ID', { exact: true }).fill('12.5');
    await page.getByLabel('Name', { exact: true }).fill('n'.repeat(201));
    await page.getByRole('button', { name: 'Add plant' }).click();
    await expect
      .poll(() => idError.textContent())
      .toBe('id must be an integer from -9223372036854775808 to 9223372036854775807');
    expect(await page.locator('#new-plant-name-error').textContent()).toBe(
      'name must be at most 200 characters',
    );
    expect(creates()).toBe(0);
    await expectAccessible(page, 'add form, with errors');

    // The api says the same, field by field, of the same plant.
    const api400 = await rest('/plants', { method: 'POST', body: `{"id":12.5,"name":"${'n'.repeat(201)}"}` });
    expect(await api400.json()).toEqual({
      error: 400,
      message:
        'Invalid request body: id must be an integer from -9223372036854775808 to 9223372036854775807; ' +
        'name must be at most 200 characters.',
    });

    const taken = '424242';
    expect((await rest('/plants', { method: 'POST', body: `{"id":${taken},"name":"First"}` })).status).toBe(
      200,
    );
    await addPlant(page, { id: taken, name: 'Second' });
    await expect.poll(() => idError.textContent()).toBe(`A plant with id ${taken} already exists.`);
    expect(creates()).toBe(1);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('new-plant-id');
    await expectAccessible(page, 'add form, 409');
  });

  it('adds a plant with the keyboard alone', async () => {
    const { page, problems } = await newPage();
    await page.goto(consoleUrl());
    // As a person would: once the screen shows.
    await page.getByLabel('Token').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('token');
    await page.keyboard.type(TOKEN);
    await page.keyboard.press('Enter');
    await page.getByText('Live updates on').waitFor();

    // From the top of the page to ID: past `Sign out` only.
    let presses = 0;
    while ((await page.evaluate(() => document.activeElement?.id)) !== 'new-plant-id' && presses < 10) {
      await page.keyboard.press('Tab');
      presses += 1;
    }
    expect(presses).toBeLessThanOrEqual(2);
    await page.keyboard.type('77');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Keyboard fern');
    await page.keyboard.press('Tab');
    await page.keyboard.type('fern');
    await page.keyboard.press('Enter');
    await row(page, '77').waitFor();
    await expect
      .poll(() => page.getByRole('status').allTextContents())
      .toContain('Added plant 77 (Keyboard fern).');
    // Ready for the next one: the form is empty and ID has focus.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('new-plant-id');
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('');

    // A mistake, fixed without the mouse: Enter on an empty form focuses ID with its message.
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#new-plant-id-error').textContent()).toBe('id is required');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('new-plant-id');

    // The delete dialog too: it opens on Cancel, and Escape closes it where it was opened.
    await row(page, '77').getByRole('button', { name: 'Delete plant 77' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
      'Delete plant 77',
    );
    expect(problems).toEqual([]);
  });

  it('loads the list page by page by cursor, on scroll and with Load more, and filters by tag', async () => {
    // 250 more plants: the store then holds more than two pages.
    const ids = Array.from({ length: 250 }, (_, i) => 1_000_000 + i);
    for (let i = 0; i < ids.length; i += 25) {
      await Promise.all(
        ids.slice(i, i + 25).map(async (id) => {
          const tag = id % 5 === 0 ? 'fern' : 'aroid';
          const answer = await rest('/plants', {
            method: 'POST',
            body: `{"id":${id},"name":"Plant ${id}","tag":"${tag}"}`,
          });
          expect(answer.status).toBe(200);
        }),
      );
    }
    const everything = await allStoredIds();
    expect(everything.length).toBeGreaterThan(250);

    const { page, requests, problems } = await openSignedIn();
    const shownIds = () => page.locator('td.id').allTextContents();
    await expect.poll(async () => (await shownIds()).length).toBe(100);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(async () => (await shownIds()).length).toBe(200);
    // Scrolling to the end loads the rest, a page at a time.
    await expect
      .poll(
        async () => {
          await page.mouse.wheel(0, 20_000);
          return (await shownIds()).length;
        },
        { timeout: 15_000 },
      )
      .toBe(everything.length);
    expect(await shownIds()).toEqual(everything);
    await page.getByText(`${everything.length} plants loaded.`).waitFor();
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    // Each page after the first asked for the plants after the previous page's last id.
    const cursors = requests
      .filter((request) => request.url.includes('/trpc/plants.list'))
      .map((request) => decodeURIComponent(new URL(request.url).searchParams.get('input') ?? ''))
      .filter((input) => input.includes('"after"'));
    expect(cursors.length).toBeGreaterThanOrEqual(2);
    expect(cursors.every((input) => /"after":"\d+"/.test(input))).toBe(true);

    await page.getByLabel('Filter by tag').fill('fern');
    const ferns = everything.filter((id) => BigInt(id) >= 1_000_000n && BigInt(id) % 5n === 0n);
    const shownTags = () => page.getByRole('row').locator('td:nth-child(3)').allTextContents();
    // Once typing pauses, the api answers only ferns: the first page holds every one.
    await expect
      .poll(async () => {
        const tags = await shownTags();
        return tags.length > 0 && tags.every((tag) => tag === 'fern');
      })
      .toBe(true);
    expect(await shownIds()).toEqual(expect.arrayContaining(ferns));
    expect(
      requests.some(
        (request) =>
          request.url.includes('/trpc/plants.list') &&
          decodeURIComponent(request.url).includes('"tag":"fern"'),
      ),
    ).toBe(true);
    await page.getByLabel('Filter by tag').fill('no-such-tag');
    await page.getByText('No plant has the tag “no-such-tag”.').waitFor();
    await page.getByLabel('Filter by tag').fill('');

    await page.evaluate(() => {
      (document.activeElement as HTMLElement | null)?.blur();
      window.scrollTo(0, 0);
    });
    await page.screenshot({ path: join(RESULTS, 'console.png') });
    expect(problems).toEqual([]);
  });

  it('signs out: the token is forgotten, also after a reload', async () => {
    const { page, problems } = await openSignedIn();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    expect(await page.evaluate(() => ({ ...sessionStorage }))).toEqual({});
    await page.reload();
    await page.getByLabel('Token').waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    expect(problems).toEqual([]);
  });
});

describe('editing, server filters and live updates', () => {
  /** Creates a plant through REST and gives its version (the ETag's digits). */
  async function stored(plant: { id: string; name: string; tag?: string }): Promise<string> {
    const answer = await rest('/plants', {
      method: 'POST',
      body: JSON.stringify(plant).replace(`"${plant.id}"`, plant.id),
    });
    expect(answer.status).toBe(200);
    return answer.headers.get('etag')!.replaceAll('"', '');
  }

  /** Another client's change, through REST. */
  async function patch(id: string, body: string): Promise<string> {
    const answer = await rest(`/plants/${id}`, { method: 'PATCH', body });
    expect(answer.status).toBe(200);
    return answer.headers.get('etag')!.replaceAll('"', '');
  }

  const editDialog = (page: Page, id: string) => page.getByRole('dialog', { name: `Edit plant ${id}` });

  async function openEdit(page: Page, id: string) {
    await row(page, id)
      .getByRole('button', { name: `Edit plant ${id}` })
      .click();
    const dialog = editDialog(page, id);
    await dialog.waitFor();
    return dialog;
  }

  it('edits a plant: Save sends the version it read, and the store holds the new values, the tag removed', async () => {
    // Beyond -2^53 (Number would round it), and on the first page whatever else the store holds.
    const id = '-9007199254740995';
    const version = await stored({ id, name: 'Calathea', tag: 'prayer' });
    const { page, problems } = await openSignedIn();
    const dialog = await openEdit(page, id);
    // Focus starts on Name, filled with what the row showed.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('edit-plant-name');
    expect(await dialog.getByLabel('Name').inputValue()).toBe('Calathea');
    expect(await dialog.getByLabel('Tag').inputValue()).toBe('prayer');
    await expectAccessible(page, 'edit form');

    // The api's rules, before anything is sent.
    await dialog.getByLabel('Name').fill('');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => dialog.locator('#edit-plant-name-error').textContent()).toBe('name is required');
    await expectAccessible(page, 'edit form, with an error');

    await dialog.getByLabel('Name').fill('Calathea orbifolia');
    await dialog.getByLabel('Tag').fill('');
    const updated = page.waitForResponse((response) => response.url().includes('/trpc/plants.update'));
    await dialog.getByRole('button', { name: 'Save' }).click();
    expect((await updated).status()).toBe(200);
    expect(sentInput(await updated)).toEqual({
      id,
      name: 'Calathea orbifolia',
      tag: null,
      expectedVersion: version,
    });
    await dialog.waitFor({ state: 'hidden' });
    const answer = await rest(`/plants/${id}`);
    const now = answer.headers.get('etag')!.replaceAll('"', '');
    expect(BigInt(now)).toBeGreaterThan(BigInt(version));
    expect(await answer.text()).toBe(`{"id":${id},"name":"Calathea orbifolia","version":${now}}`);
    expect(await row(page, id).getByRole('cell').allTextContents()).toEqual([
      id,
      'Calathea orbifolia',
      '',
      'Edit Delete',
    ]);
    await expect
      .poll(() => page.getByRole('status').allTextContents())
      .toContain(`Saved plant ${id} (Calathea orbifolia).`);
    // Focus is back on the row's Edit button.
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
      `Edit plant ${id}`,
    );
    // With the keyboard: Enter opens the form on Name, Escape closes it where it was opened.
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('edit-plant-name');
    expect(await dialog.getByLabel('Name').inputValue()).toBe('Calathea orbifolia');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
      `Edit plant ${id}`,
    );
    expect(problems).toEqual([]);
  });

  it('shows a change by someone else while the form is open, and on Save the conflict: Apply again applies the change to the new version', async () => {
    const id = '7100';
    await stored({ id, name: 'Pilea', tag: 'pancake' });
    const { page, problems } = await openSignedIn();
    const dialog = await openEdit(page, id);
    await dialog.getByLabel('Name').fill('Pilea peperomioides');

    // A second client changes the tag between the read and the save: the form says so, live.
    const theirs = await patch(id, '{"tag":"chinese-money"}');
    const changedAt = Date.now();
    await dialog
      .getByText('Changed by someone else: it is now “Pilea” (tag “chinese-money”).')
      .waitFor({ timeout: LIVE_MS });
    timings.liveChangeSeenByEditForm = Date.now() - changedAt;

    const refused = page.waitForResponse((response) => response.url().includes('/trpc/plants.update'));
    await dialog.getByRole('button', { name: 'Save' }).click();
    expect((await refused).status()).toBe(412);
    // Nothing was saved; the conflict view shows the plant as it is now, and the change.
    const conflict = dialog.getByRole('alert');
    await expect
      .poll(() => conflict.textContent())
      .toBe(
        'Not saved: someone else changed this plant after you opened it. It is now “Pilea” (tag “chinese-money”).',
      );
    expect(await dialog.getByText('Your change:').textContent()).toBe(
      'Your change: name “Pilea peperomioides”.',
    );
    expect(await (await rest(`/plants/${id}`)).text()).toBe(
      `{"id":${id},"name":"Pilea","tag":"chinese-money","version":${theirs}}`,
    );
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Apply again');
    await expectAccessible(page, 'edit conflict');

    const applied = page.waitForResponse((response) => response.url().includes('/trpc/plants.update'));
    await dialog.getByRole('button', { name: 'Apply again' }).click();
    expect((await applied).status()).toBe(200);
    // Only the field edited, for the version now stored: their tag stays.
    expect(sentInput(await applied)).toEqual({ id, name: 'Pilea peperomioides', expectedVersion: theirs });
    await dialog.waitFor({ state: 'hidden' });
    const answer = await rest(`/plants/${id}`);
    const now = answer.headers.get('etag')!.replaceAll('"', '');
    expect(await answer.text()).toBe(
      `{"id":${id},"name":"Pilea peperomioides","tag":"chinese-money","version":${now}}`,
    );
    await expect.poll(() => row(page, id).getByRole('cell').nth(1).textContent()).toBe('Pilea peperomioides');

    // Cancel in the conflict view leaves the store as the other client left it.
    const again = await openEdit(page, id);
    await again.getByLabel('Tag').fill('mine');
    const last = await patch(id, '{"name":"Pilea again"}');
    await again.getByRole('button', { name: 'Save' }).click();
    await again.getByRole('button', { name: 'Apply again' }).waitFor();
    await again.getByRole('button', { name: 'Cancel' }).click();
    await again.waitFor({ state: 'hidden' });
    expect(await (await rest(`/plants/${id}`)).text()).toBe(
      `{"id":${id},"name":"Pilea again","tag":"chinese-money","version":${last}}`,
    );
    expect(problems).toEqual([]);
  });

  it('asks again before deleting a plant someone else changed since it was shown', async () => {
    const id = '7200';
    await stored({ id, name: 'Ficus', tag: 'tree' });
    const { page, problems } = await openSignedIn();
    const dialog = page.getByRole('dialog', { name: 'Delete plant?' });
    // The event of the change is held back: the row still shows the version read.
    await page.route('**/trpc/plants.events**', (route) => route.abort());
    await page.reload();
    await row(page, id).waitFor();
    const theirs = await patch(id, '{"name":"Ficus lyrata"}');
    await row(page, id)
      .getByRole('button', { name: `Delete plant ${id}` })
      .click();
    const refused = page.waitForResponse((response) => response.url().includes('/trpc/plants.delete'));
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    expect((await refused).status()).toBe(412);
    await dialog
      .getByText('Changed by someone else after you opened this: it is now “Ficus lyrata” (tag “tree”).')
      .waitFor();
    expect((await rest(`/plants/${id}`)).status).toBe(200);
    await expectAccessible(page, 'delete confirmation, changed');
    const deleted = page.waitForResponse((response) => response.url().includes('/trpc/plants.delete'));
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    expect((await deleted).status()).toBe(200);
    expect(sentInput(await deleted)).toEqual({ id, expectedVersion: theirs });
    await row(page, id).waitFor({ state: 'detached' });
    expect((await rest(`/plants/${id}`)).status).toBe(404);
    expect(problems.filter((problem) => !problem.includes('plants.events'))).toEqual([]);
  });

  it('shows an update by another client within a second, on every page', async () => {
    const id = '7300';
    await stored({ id, name: 'Aloe', tag: 'succulent' });
    const first = await openSignedIn();
    const second = await openSignedIn();
    await row(first.page, id).waitFor();
    await row(second.page, id).waitFor();
    await patch(id, '{"name":"Aloe vera","tag":null}');
    const changedAt = Date.now();
    for (const { page } of [first, second]) {
      await expect
        .poll(() => row(page, id).getByRole('cell').allTextContents(), { timeout: LIVE_MS })
        .toEqual([id, 'Aloe vera', '', 'Edit Delete']);
    }
    timings.liveUpdateSeenByOtherPages = Date.now() - changedAt;
    expect([...first.problems, ...second.problems]).toEqual([]);
  });

  it('filters by tag and name prefix on the server, Load more keeping the filter, live changes included', async () => {
    // 130 plants with one tag (more than a page), half of them named "Begonia …".
    const ids = Array.from({ length: 130 }, (_, i) => 8_000_000 + i);
    for (let i = 0; i < ids.length; i += 26) {
      await Promise.all(
        ids
          .slice(i, i + 26)
          .map((id) =>
            stored({ id: String(id), name: `${id % 2 === 0 ? 'Begonia' : 'Coleus'} ${id}`, tag: 'shade' }),
          ),
      );
    }
    const { page, requests, problems } = await openSignedIn();
    const shownIds = () => page.locator('td.id').allTextContents();
    const listInputs = () =>
      requests
        .filter((request) => request.url.includes('/trpc/plants.list'))
        .map((request) => decodeURIComponent(new URL(request.url).searchParams.get('input') ?? ''));

    await page.getByLabel('Filter by tag').fill('shade');
    // Once typing pauses: a full first page of the tag.
    await expect.poll(shownIds).toEqual(ids.slice(0, 100).map(String));
    await page.getByText('100 plants loaded, more in the store.').waitFor();
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(async () => (await shownIds()).length).toBe(130);
    expect(await shownIds()).toEqual(ids.map(String));
    // The first page and the next one both asked the api for the tag; the next one after the cursor.
    expect(listInputs().filter((input) => input.includes('"tag":"shade"'))).toEqual([
      expect.not.stringContaining('"after"'),
      expect.stringContaining(`"after":"${ids[99]}"`),
    ]);

    await page.getByLabel('Name starts with').fill('Begonia');
    const begonias = ids.filter((id) => id % 2 === 0).map(String);
    await expect.poll(shownIds).toEqual(begonias);
    expect(listInputs().at(-1)).toContain('"tag":"shade","name_prefix":"Begonia"');
    await expectAccessible(page, 'plants, filtered');

    // Live: a plant updated into the filter shows; one updated out of it goes.
    await patch(String(ids[1]), '{"name":"Begonia rex"}');
    await patch(String(ids[0]), '{"tag":"sun"}');
    await expect.poll(shownIds, { timeout: LIVE_MS }).toEqual([String(ids[1]), ...begonias.slice(1)]);

    // Case-sensitive, as the api compares.
    await page.getByLabel('Filter by tag').fill('');
    await page.getByLabel('Name starts with').fill('begonia');
    await page.getByText('No plant has a name starting with “begonia”.').waitFor();
    expect(listInputs().at(-1)).toContain('"name_prefix":"begonia"');
    expect(listInputs().at(-1)).not.toContain('"tag"');
    await page.getByLabel('Name starts with').fill('');
    expect(problems).toEqual([]);
  });
});

describe('what people see when something is wrong', () => {
  it("shows a 403 with the api's message, and a token revoked meanwhile signs the tab out by itself (its stream ends)", async () => {
    const { stdout } = await runApiCommand(['token', 'create', '--name', 'reader', '--scope', 'read'], {
      DATABASE_URL: `file:${join(api.dataDir, 'plants.db')}`,
    });
    const reader = stdout.trim();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { page } = await openSignedIn(reader);
    await addPlant(page, { id: '5150', name: 'Not mine to add' });
    await expect
      .poll(() => page.getByRole('alert').allTextContents())
      .toContain('The plant was not added: This token lacks the write scope this operation needs.');
    await expectAccessible(page, 'add form, 403');

    await runApiCommand(['token', 'revoke', '--name', 'reader'], {
      DATABASE_URL: `file:${join(api.dataDir, 'plants.db')}`,
    });
    // The api ends a revoked token's event stream (within TOKEN_REFRESH_MS): the tab signs out by
    // itself, before its next request.
    await page.getByLabel('Token').waitFor();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('Signed out: The bearer token was revoked.');
    expect(await page.evaluate(() => ({ ...sessionStorage }))).toEqual({});
  });

  it('shows that the api is unreachable while it restarts, then catches up with what it missed', async () => {
    // A plant before the page opens: the list has a version to resume from.
    expect((await rest('/plants', { method: 'POST', body: '{"id":8079,"name":"Before"}' })).status).toBe(200);
    const { page, requests } = await openSignedIn();
    const lists = () => requests.filter((request) => request.url.includes('/trpc/plants.list')).length;
    // The stream's first connection has no position yet, so it reads the list once more: let that
    // read finish before the api stops, or its retry would land after the restart and count there.
    await page.getByText('Live updates on').waitFor();
    await expect.poll(lists).toBeGreaterThanOrEqual(2);
    await page.waitForTimeout(1_000);

    /** Stops the api, checks what the page shows, starts it again and creates `id` at once. */
    async function restartAndCreate(id: string): Promise<number> {
      const port = new URL(api.url).port;
      const { dataDir } = api;
      await api.stop();
      await page
        .getByRole('alert')
        .filter({ hasText: 'Cannot reach the Plant Store api. Retrying…' })
        .waitFor();
      await page.getByText('Connecting live updates…').waitFor();
      if (axeReport['plants, api unreachable'] === undefined)
        await expectAccessible(page, 'plants, api unreachable');
      api = await startApiProcess({ token: TOKEN, dataDir, env: { PORT: port, TOKEN_REFRESH_MS: '200' } });
      const listsBefore = lists();
      // Created before the page reconnects (EventSource waits 3 s between attempts).
      const answer = await rest('/plants', { method: 'POST', body: `{"id":${id},"name":"While away"}` });
      expect(answer.status).toBe(200);
      await row(page, id).waitFor({ timeout: 15_000 });
      await page.getByText('Live updates on').waitFor();
      await expect.poll(() => page.getByRole('alert').filter({ hasText: 'Cannot reach' }).count()).toBe(0);
      return lists() - listsBefore;
    }

    // No event seen yet: the stream resumes from the position the list holds (the greatest version
    // on its first page), so the plant arrives with no new read either.
    expect(await restartAndCreate('8080')).toBe(0);

    // With an event seen, the stream resumes after it: the plant arrives with no new read.
    const seen = await rest('/plants', { method: 'POST', body: '{"id":8081,"name":"Seen live"}' });
    expect(seen.status).toBe(200);
    await row(page, '8081').waitFor({ timeout: LIVE_MS });
    expect(await restartAndCreate('8082')).toBe(0);
  });
});

describe('429 with the wait', () => {
  let limited: ApiProcess;
  beforeAll(async () => {
    limited = await startApiProcess({
      token: TOKEN,
      env: { RATE_LIMIT_MAX: '20', RATE_LIMIT_WINDOW_SECONDS: '8' },
    });
  });
  afterAll(async () => {
    await limited?.stop();
    limited?.cleanup();
  });

  /**
   * Spends what is left of the token's requests in this window, with at least 4 s of the window
   * left (Retry-After rounds up), so the page's next call is refused too.
   */
  async function exhaust(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const answer = await fetch(`${limited.url}/plants?limit=1`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      if (answer.status !== 429) continue;
      const wait = Number(answer.headers.get('retry-after'));
      if (wait >= 5) return;
      await new Promise((resolve) => setTimeout(resolve, wait * 1000 + 100));
    }
    throw new Error('never limited');
  }

  it('says how long to wait, and retries the list by itself after it', async () => {
    const watched = await openPage(browser, limited.url);
    opened.push(watched);
    const { page } = watched;
    await page.goto(`${limited.url}/app/`);
    await signIn(page);
    await page.getByText('Live updates on').waitFor();

    await exhaust();
    await addPlant(page, { id: '429', name: 'Too soon' });
    await expect
      .poll(() => page.getByRole('alert').allTextContents())
      .toContainEqual(
        // The api's own message: the rate limit answers /trpc in tRPC's shape.
        expect.stringMatching(
          /^The plant was not added: Too many requests: the limit is \d+ per \d+ s; retry in \d+ s\.$/,
        ),
      );

    await exhaust();
    await page.reload();
    const banner = page.getByRole('alert').filter({ hasText: /^Too many requests: retrying in \d+ s\.$/ });
    await banner.waitFor({ timeout: 5_000 });
    await expectAccessible(page, 'plants, 429');
    await page.getByText('The store holds no plants yet.').waitFor({ timeout: 20_000 });
    await expect.poll(() => banner.count(), { timeout: 20_000 }).toBe(0);
  });
});

describe('no page broke its CSP', () => {
  it('had no CSP violation, no uncaught error and no request to another origin on any page', () => {
    expect(opened.flatMap((watched) => watched.problems)).toEqual([]);
  });
});

async function interactiveAt(page: Page): Promise<number> {
  await page.waitForFunction((mark) => performance.getEntriesByName(mark).length > 0, INTERACTIVE_MARK);
  return page.evaluate(
    (mark) => Math.round(performance.getEntriesByName(mark)[0]!.startTime),
    INTERACTIVE_MARK,
  );
}

/** Every id in the store, in order, as the api writes them (exact). */
async function allStoredIds(): Promise<string[]> {
  const ids: string[] = [];
  let after = '';
  for (;;) {
    const text = await (await rest(`/plants?limit=1000${after}`)).text();
    const page = [...text.matchAll(/"id":(-?\d+)/g)].map((match) => match[1]!);
    ids.push(...page);
    if (page.length < 1000) return ids;
    after = `&after=${page.at(-1)}`;
  }
}
