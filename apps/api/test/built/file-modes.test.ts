import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { postPlant, send } from '../support/http.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('files the service keeps (SQLite, generated token)', () => {
  const root = mkdtempSync(join(tmpdir(), 'plant-store-modes-'));
  // A directory the service has to create, two levels deep.
  const data = join(root, 'var', 'data');
  const start = () =>
    startApiProcess({ token: null, dataDir: root, env: { DATABASE_URL: `file:${join(data, 'plants.db')}` } });
  let api: ApiProcess | undefined;
  afterAll(async () => {
    await api?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('creates its data directory 0700 and its database, log, token and secrets key files 0600', async () => {
    api = await start();
    const token = readFileSync(join(data, 'api-token'), 'utf8');
    expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}\n$/);
    const headers = { authorization: `Bearer ${token.trim()}`, 'content-type': 'application/json' };
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}', headers)).status).toBe(200);

    for (const dir of [join(root, 'var'), data]) expect([dir, mode(dir)]).toEqual([dir, 0o700]);
    // While the service runs, SQLite keeps its write-ahead log and shared-memory index beside the
    // database; the token and the webhook secrets key were written whole through temporary files
    // that are gone.
    const files = ['api-token', 'plants.db', 'plants.db-shm', 'plants.db-wal', 'webhook-secrets.key'];
    expect(readdirSync(data).sort()).toEqual(files);
    for (const file of files) expect([file, mode(join(data, file))]).toEqual([file, 0o600]);
    expect(api.logs.join('\n')).not.toContain(token.trim());
  });

  it('makes existing files private again and reuses the saved token', async () => {
    const token = readFileSync(join(data, 'api-token'), 'utf8').trim();
    await api!.stop();
    for (const file of ['plants.db', 'api-token']) chmodSync(join(data, file), 0o644);

    api = await start();
    const answer = await send(`${api.url}/plants/1`, { headers: { authorization: `Bearer ${token}` } });
    expect(answer.text).toBe('{"id":1,"name":"Fern","version":1}');
    expect(readFileSync(join(data, 'api-token'), 'utf8').trim()).toBe(token);
    const files = ['api-token', 'plants.db', 'plants.db-shm', 'plants.db-wal', 'webhook-secrets.key'];
    expect(readdirSync(data).sort()).toEqual(files);
    for (const file of files) expect([file, mode(join(data, file))]).toEqual([file, 0o600]);
  });
});
