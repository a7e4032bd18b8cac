/**
 * Issue 43 point 3: the console signs in with the api's identity provider (a real oidc-provider on
 * loopback, through its own login and consent pages) by authorization code + PKCE, keeps its
 * tokens in the tab, renews them before they expire, and signs out at the provider. Against the
 * built api with the built console (`pnpm build` first).
 */
import { createServer } from 'node:net';
import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import { startProvider, type TestProvider } from '@plant-store/api/testing/oidc-provider';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';

const AUDIENCE = 'https://plants.example/api';
const TOKENS_KEY = 'plant-store:provider-tokens';

let provider: TestProvider;
let api: ApiProcess;
let browser: Browser;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  const app = `http://127.0.0.1:${port}/app/`;
  // 70 s tokens: the console renews a minute before they expire, so 10 s after signing in.
  provider = await startProvider({
    redirectUris: [app],
    postLogoutRedirectUris: [app],
    accessTokenTtlSeconds: 70,
  });
  api = await startApiProcess({
    env: {
      PORT: String(port),
      OIDC_ISSUER: provider.issuer,
      OIDC_AUDIENCE: AUDIENCE,
      OIDC_CLIENT_ID: 'plant-console',
    },
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  api?.cleanup();
  await provider?.close();
});

/** A page that may reach the api and the provider only; CSP violations and page errors are collected. */
async function openPage(): Promise<{ page: Page; context: BrowserContext; problems: string[] }> {
  const context = await browser.newContext();
  const allowed = new Set([new URL(api.url).origin, provider.issuer]);
  await context.route('**/*', (route) =>
    allowed.has(new URL(route.request().url()).origin) ? route.fallback() : route.abort('blockedbyclient'),
  );
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.exposeFunction('reportCspViolation', (text: string) => problems.push(text));
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      window.reportCspViolation('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
  });
  return { page, context, problems };
}

const saved = (page: Page) =>
  page.evaluate(
    (key) => JSON.parse(sessionStorage.getItem(key) ?? 'null') as { accessToken: string } | null,
    TOKENS_KEY,
  );

describe('the console with an identity provider', () => {
  it('signs in through the provider’s pages with PKCE, renews its token, and signs out at the provider', async () => {
    const { page, context, problems } = await openPage();
    const answer = await page.goto(`${api.url}/app/`);
    expect(answer?.headers()['content-security-policy']).toContain(`connect-src 'self' ${provider.issuer};`);
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();

    // The provider's own pages: its login form, then its consent.
    await page.waitForURL(`${provider.issuer}/interaction/**`);
    await page.locator('input[name=login]').fill('frank');
    await page.locator('input[name=password]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByText('Live updates on').waitFor();
    expect(new URL(page.url()).search).toBe('');
    const first = await saved(page);
    const claims = JSON.parse(Buffer.from(first!.accessToken.split('.')[1]!, 'base64url').toString());
    expect([claims.iss, claims.sub, claims.aud]).toStrictEqual([provider.issuer, 'frank', AUDIENCE]);
    // In the tab only: nothing in localStorage, no cookie (cookies ignore ports: the provider's
    // own session cookies are there, without the tokens).
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect((await context.cookies(api.url)).map((cookie) => cookie.name).sort()).toStrictEqual([
      '_session',
      '_session.sig',
    ]);
    // Log lines reach the api's output within LOG_WRITE_DELAY_MS (10 ms), not at once.
    const logged = () =>
      api.logs
        .map((line) => JSON.parse(line))
        .filter((line) => line.msg === 'request' && line.route !== 'unmatched');
    await expect
      .poll(() => logged().some((line) => line.tokenName === `${provider.issuer}#frank`), { timeout: 5_000 })
      .toBe(true);

    // Renewed before it expires, with no reload and the console still working.
    await expect
      .poll(async () => (await saved(page))?.accessToken, { timeout: 25_000 })
      .not.toBe(first!.accessToken);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    // Signing out ends the provider's session: back on the console's sign-in, nothing kept.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${provider.issuer}/**`);
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.waitForURL(`${api.url}/app/`);
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).waitFor();
    expect(await saved(page)).toBeNull();
    // The provider asks for a login again: its session ended.
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();
    await page.locator('input[name=login]').waitFor();
    expect(problems).toStrictEqual([]);
    await context.close();
  }, 60_000);

  it('keeps the pasted-token sign-in beside it', async () => {
    const { page, context } = await openPage();
    await page.goto(`${api.url}/app/`);
    await page.getByLabel('Token').waitFor();
    await context.close();
  });
});
