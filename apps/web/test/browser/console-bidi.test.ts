/**
 * Issue 40, row 4: names and tags with bidi controls (U+202E RIGHT-TO-LEFT OVERRIDE, U+2067
 * RIGHT-TO-LEFT ISOLATE, unterminated) and right-to-left letters, shown by the console in Chromium
 * on the built api. Wherever the console puts user text into a sentence of its own (the list, the
 * dialogs, the edit form's notes, the announcements, the empty list's message), the user text is in
 * an isolating element, and the sentence's own characters are laid out in their order: "(id 73)"
 * never reads "(37 di)".
 */
import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openPage, type Watched } from '../support/browser.ts';

const TOKEN = 'console-bidi-token-0123456789';
/** "family free", overridden right to left: unterminated, it would reverse all that follows. */
const OVERRIDDEN = '\u202eeerf ylmiaf';
/** Hebrew "root" after an isolate that is never closed. */
const ISOLATED = '\u2067שורש';
/** Hebrew "lemon tree", the same way. */
const RTL_NAME = '\u2067עץ לימון';
const OVERRIDDEN_TAG = '\u202egat';

let api: ApiProcess;
let browser: Browser;
let watched: Watched;

beforeAll(async () => {
  api = await startApiProcess({ token: TOKEN });
  browser = await launchChromium();
  for (const plant of [
    { id: 73, name: OVERRIDDEN, tag: ISOLATED },
    { id: 74, name: RTL_NAME, tag: OVERRIDDEN_TAG },
  ]) {
    expect((await rest(`/plants`, { method: 'POST', body: JSON.stringify(plant) })).status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await watched?.context.close();
  await browser?.close();
  await api?.stop();
  api?.cleanup();
});

function rest(path: string, init: { method?: string; body?: string } = {}) {
  return fetch(`${api.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: init.body,
  });
}

const row = (page: Page, id: string) =>
  page.getByRole('row').filter({ has: page.getByRole('cell', { name: id, exact: true }) });

/**
 * How `element` is laid out: its own characters (every one not inside a <bdi>, spaces left out)
 * in DOM order, the pairs of them Chromium drew out of that order (right before left on a line, or
 * on an earlier line), and each <bdi>'s text and computed `unicode-bidi`.
 */
function layout(element: Locator) {
  return element.evaluate((root) => {
    const own: { char: string; left: number; top: number; height: number }[] = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      if (node.parentElement?.closest('bdi')) continue;
      const text = node.textContent ?? '';
      for (let i = 0; i < text.length; i++) {
        if (/\s/.test(text[i]!)) continue;
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const box = range.getClientRects()[0];
        if (box === undefined || box.width === 0) continue;
        own.push({ char: text[i]!, left: box.left, top: box.top, height: box.height });
      }
    }
    const disordered = own.slice(1).flatMap((b, i) => {
      const a = own[i]!;
      const sameLine = Math.abs(a.top - b.top) < a.height / 2;
      return (sameLine ? b.left < a.left : b.top < a.top) ? [`${a.char}${b.char}`] : [];
    });
    const isolated = [...root.querySelectorAll('bdi')].map((bdi) => [
      bdi.textContent,
      getComputedStyle(bdi).unicodeBidi,
    ]);
    return { own: own.map(({ char }) => char).join(''), disordered, isolated };
  });
}

/**
 * What `layout` finds when the console's sentence is laid out in order around `isolated`, each in
 * a <bdi> of its own; an RLI a text leaves open is closed there (a PDI: without it Chromium lays
 * out the rest of the sentence inside that isolate).
 */
const inOrder = (own: string, ...isolated: string[]) => ({
  own: own.replaceAll(/\s/g, ''),
  disordered: [],
  isolated: isolated.map((text) => [text.includes('\u2067') ? `${text}\u2069` : text, 'isolate']),
});

describe('user text with bidi controls in the console (Chromium, built api)', () => {
  it('isolates names and tags in the list, the dialogs, the notes and the announcements', async () => {
    watched = await openPage(browser, api.url);
    const { page, problems } = watched;
    await page.goto(`${api.url}/app/`);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Live updates on').waitFor();
    await row(page, '74').waitFor();

    // The delete confirmation.
    await row(page, '73').getByRole('button', { name: 'Delete plant 73' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete plant?' });
    await confirm.waitFor();
    expect(await layout(confirm.locator('#delete-what'))).toStrictEqual(
      inOrder('“” (id 73) will be deleted for everyone. This cannot be undone.', OVERRIDDEN),
    );
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });

    // The list: each name and tag cell holds the text in a <bdi>.
    for (const [id, name, tag] of [
      ['73', OVERRIDDEN, ISOLATED],
      ['74', RTL_NAME, OVERRIDDEN_TAG],
    ] as const) {
      const cells = row(page, id).getByRole('cell');
      expect(await layout(cells.nth(1))).toStrictEqual(inOrder('', name));
      expect(await layout(cells.nth(2))).toStrictEqual(inOrder('', tag));
    }

    // The empty list's message names the filter as typed.
    await page.getByLabel('Filter by tag').fill(`${OVERRIDDEN_TAG}x`);
    const empty = page.locator('td.empty');
    await empty.getByText('No plant has the tag').waitFor();
    expect(await layout(empty)).toStrictEqual(inOrder('No plant has the tag “”.', `${OVERRIDDEN_TAG}x`));
    await page.getByLabel('Filter by tag').fill('');
    await row(page, '74').waitFor();

    // The edit form: someone else's change while it is open, then the conflict on Save.
    await row(page, '74').getByRole('button', { name: 'Edit plant 74' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit plant 74' });
    await edit.waitFor();
    await edit.getByLabel('Name').fill(OVERRIDDEN);
    expect((await rest('/plants/74', { method: 'PATCH', body: '{"tag":"\\u202eother"}' })).status).toBe(200);
    const note = edit.locator('p.note');
    await note.getByText('Changed by someone else').waitFor();
    expect(await layout(note)).toStrictEqual(
      inOrder('Changed by someone else: it is now “” (tag “”).', RTL_NAME, '\u202eother'),
    );
    await edit.getByRole('button', { name: 'Save' }).click();
    const conflict = edit.getByRole('alert');
    await conflict.waitFor();
    expect(await layout(conflict)).toStrictEqual(
      inOrder(
        'Not saved: someone else changed this plant after you opened it. It is now “” (tag “”).',
        RTL_NAME,
        '\u202eother',
      ),
    );
    expect(await layout(edit.getByText('Your change:'))).toStrictEqual(
      inOrder('Your change: name “”.', OVERRIDDEN),
    );

    // The announcements of a save, a deletion and an addition.
    const announcement = page.locator('p.announcement');
    await edit.getByRole('button', { name: 'Apply again' }).click();
    await announcement.getByText('Saved plant 74').waitFor();
    expect(await layout(announcement)).toStrictEqual(inOrder('Saved plant 74 ().', OVERRIDDEN));

    await row(page, '73').getByRole('button', { name: 'Delete plant 73' }).click();
    await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
    await announcement.getByText('Deleted plant 73').waitFor();
    expect(await layout(announcement)).toStrictEqual(inOrder('Deleted plant 73 ().', OVERRIDDEN));

    await page.getByLabel('ID', { exact: true }).fill('75');
    await page.getByLabel('Name', { exact: true }).fill(RTL_NAME);
    await page.getByRole('button', { name: 'Add plant' }).click();
    await announcement.getByText('Added plant 75').waitFor();
    expect(await layout(announcement)).toStrictEqual(inOrder('Added plant 75 ().', RTL_NAME));

    expect(await (await rest('/plants/74')).json()).toMatchObject({ name: OVERRIDDEN, tag: '\u202eother' });
    expect((await rest('/plants/73')).status).toBe(404);
    expect(problems).toStrictEqual([]);
  });
});
