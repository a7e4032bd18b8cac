import type { ReactElement, ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { describeChange, describePlant } from './plant-text.tsx';

const fern = { id: 9223372036854775807n, name: 'Fern', tag: 'herb', version: 4n };
const html = (node: ReactNode) => renderToStaticMarkup(node as ReactElement);

describe('describing', () => {
  it('says what a change does and what a plant is, each name and tag in a <bdi> of its own', () => {
    expect(html(describeChange({ name: 'Royal fern', tag: null }))).toBe(
      'name “<bdi>Royal fern</bdi>”, tag removed',
    );
    expect(html(describeChange({ tag: 'herb' }))).toBe('tag “<bdi>herb</bdi>”');
    expect(html(describePlant(fern))).toBe('“<bdi>Fern</bdi>” (tag “<bdi>herb</bdi>”)');
    expect(html(describePlant({ id: 1n, name: 'Moss', version: 0n }))).toBe('“<bdi>Moss</bdi>” (no tag)');
  });

  it('keeps bidi controls in a name inside its <bdi>, an isolate left open closed there', () => {
    expect(html(describePlant({ id: 73n, name: '\u202eeerf ylmiaf', version: 1n }))).toBe(
      '“<bdi>\u202eeerf ylmiaf</bdi>” (no tag)',
    );
    expect(
      html(describePlant({ id: 74n, name: 'a\u2067b', tag: '\u2069\u2068\u2066c\u2069', version: 1n })),
    ).toBe('“<bdi>a\u2067b\u2069</bdi>” (tag “<bdi>\u2069\u2068\u2066c\u2069\u2069</bdi>”)');
  });
});
