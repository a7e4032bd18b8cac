import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import { startProvider, type TestProvider } from '@plant-store/api/testing/oidc-provider';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runPlants } from '../support/plants-cli.ts';

/**
 * Issue 43 point 4: `plants login` signs in with the device flow of a real OpenID provider
 * (oidc-provider on loopback, approved through its own pages in Chromium), keeps its tokens in a
 * file only its user can read, refreshes them, and `plants logout` forgets them.
 */

const AUDIENCE = 'https://plants.example/api';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let provider: TestProvider;
let api: ApiProcess;
let home: string;
beforeAll(async () => {
  // Access tokens of 30 s: within the CLI's minute of margin, each command refreshes first.
  provider = await startProvider({ accessTokenTtlSeconds: 30 });
  api = await startApiProcess({
    env: { OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE, OIDC_CLIENT_ID: 'plants-cli' },
  });
  home = mkdtempSync(join(tmpdir(), 'plants-login-'));
}, 60_000);
afterAll(async () => {
  await api.stop();
  api.cleanup();
  await provider.close();
  rmSync(home, { recursive: true, force: true });
});

const env = () => ({ PLANTS_URL: api.url, XDG_CONFIG_HOME: join(home, 'config'), HOME: home });
const file = () => join(home, 'config', 'plant-store', 'credentials.json');

/** Approves a device code through the provider's pages: confirm the code, sign in, consent. */
async function approve(url: string): Promise<void> {
  const profile = mkdtempSync(join(tmpdir(), 'plants-login-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
  try {
    // Only the provider on loopback: its pages' web fonts are refused.
    await browser.route('**/*', (route) =>
      new URL(route.request().url()).origin === provider.issuer
        ? route.fallback()
        : route.abort('blockedbyclient'),
    );
    const page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(url);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('input[name=login]').fill('erin');
    await page.locator('input[name=password]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('Sign-in Success').waitFor();
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

describe('plants login', () => {
  it('signs in with the device flow, keeps tokens 0600 under XDG_CONFIG_HOME, refreshes them; PLANTS_TOKEN wins; logout forgets', async () => {
    const child = spawn(process.execPath, [BIN, 'login'], {
      env: { PATH: process.env.PATH ?? '', ...env() },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    while (!/open (\S+)/.test(stderr)) await new Promise((resolve) => setTimeout(resolve, 50));
    const url = /open (\S+)/.exec(stderr)![1]!;
    expect(url.startsWith(`${provider.issuer}/device`)).toBe(true);
    await approve(url);
    expect(await exited).toBe(0);
    expect(stderr).toMatch(
      /and check that it shows the code [A-Z-]+\.\nSigned in to http:\/\/127\.0\.0\.1:\d+\.\n$/,
    );

    expect(statSync(file()).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'config', 'plant-store')).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(readFileSync(file(), 'utf8'))[api.url];
    expect(Object.keys(saved).sort()).toStrictEqual([
      'accessToken',
      'audience',
      'clientId',
      'expiresAt',
      'issuer',
      'refreshToken',
    ]);

    // The token is a JWT of the provider for erin: the api takes it (and it was refreshed first).
    expect(await runPlants(['create', '--id', '1', '--name', 'Fern'], env())).toMatchObject({ code: 0 });
    const refreshed = JSON.parse(readFileSync(file(), 'utf8'))[api.url];
    expect(refreshed.accessToken).not.toBe(saved.accessToken);
    const payload = JSON.parse(Buffer.from(refreshed.accessToken.split('.')[1], 'base64url').toString());
    expect([payload.iss, payload.sub, payload.aud]).toStrictEqual([provider.issuer, 'erin', AUDIENCE]);
    const logged = api.logs
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'request' && line.method === 'POST');
    expect(logged.at(-1).tokenName).toBe(`${provider.issuer}#erin`);

    // PLANTS_TOKEN still wins.
    expect(await runPlants(['get', '1'], { ...env(), PLANTS_TOKEN: 'not-a-token-0123456789' })).toMatchObject(
      {
        code: 1,
        stderr: 'plants: 401 The bearer token is not valid.\n',
      },
    );

    expect(await runPlants(['logout'], env())).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Signed out of ${api.url}.\n`,
    });
    expect(() => statSync(file())).toThrow();
    expect(await runPlants(['get', '1'], env())).toMatchObject({ code: 2 });
    expect(await runPlants(['logout'], env())).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Not signed in to ${api.url}.\n`,
    });
  }, 90_000);

  it('says so when the server names no identity provider', async () => {
    const plain = await startApiProcess({});
    try {
      expect(await runPlants(['login'], { ...env(), PLANTS_URL: plain.url })).toStrictEqual({
        code: 1,
        stdout: '',
        stderr: `plants: ${plain.url} has no identity provider: use a token it issued (PLANTS_TOKEN).\n`,
      });
    } finally {
      await plain.stop();
      plain.cleanup();
    }
  });
});
