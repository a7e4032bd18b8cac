import { afterEach, describe, expect, it, vi } from 'vitest';
import { newPlantWebhook, newWebhookId } from './event.ts';

describe('newPlantWebhook', () => {
  it('builds one delivery per subscriber URL, each with its own webhook-id and the exact NewPlant body', () => {
    const urls = ['http://127.0.0.1:9/a', 'https://hooks.example/b?token=t'];
    const rows = newPlantWebhook(urls).deliveriesFor({ id: 2n ** 63n - 1n, name: 'Fern', tag: 'herb' });
    expect(rows.map(({ url, payload }) => ({ url, payload }))).toStrictEqual(
      urls.map((url) => ({ url, payload: '{"id":9223372036854775807,"name":"Fern","tag":"herb"}' })),
    );
    for (const row of rows) expect(row.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(rows[0]!.id).not.toBe(rows[1]!.id);
    expect(newPlantWebhook(urls).deliveriesFor({ id: -1n, name: 'Moss' })[0]!.payload).toBe(
      '{"id":-1,"name":"Moss"}',
    );
  });

  it('builds nothing without subscribers, and allocates nothing per create for it', () => {
    const none = newPlantWebhook([]);
    const first = none.deliveriesFor({ id: 1n, name: 'Fern' });
    expect(first).toStrictEqual([]);
    expect(none.deliveriesFor({ id: 2n, name: 'Moss' })).toBe(first);
    expect(newPlantWebhook().deliveriesFor({ id: 1n, name: 'Fern' })).toBe(first);
  });
});

describe('newWebhookId', () => {
  afterEach(() => vi.useRealTimers());

  it('starts with the time in milliseconds, so later ids sort after earlier ones, and differs within one', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.UTC(2026, 10, 26, 12, 0, 0, 5));
    const first = [newWebhookId(), newWebhookId()];
    vi.setSystemTime(Date.UTC(2026, 10, 26, 12, 0, 0, 6));
    const later = newWebhookId();
    for (const id of [...first, later]) expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(first[0]!.slice(4, 16)).toBe(Date.UTC(2026, 10, 26, 12, 0, 0, 5).toString(16).padStart(12, '0'));
    expect(later.slice(4, 16)).toBe(Date.UTC(2026, 10, 26, 12, 0, 0, 6).toString(16).padStart(12, '0'));
    expect(first[0]).not.toBe(first[1]);
    expect([later, ...first].sort()[2]).toBe(later);
  });
});
