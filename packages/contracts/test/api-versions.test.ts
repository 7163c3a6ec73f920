import { describe, expect, it } from 'vitest';
import {
  API_VERSIONS,
  FIRST_PINNED_API_VERSION,
  LATEST_API_VERSION,
  apiVersion,
  apiVersionChangeInput,
  apiVersionsAfter,
  compareApiVersions,
  isApiVersion,
} from '../src/api-versions.js';

describe('API versions', () => {
  it('are dated, unique and oldest first, the newest last', () => {
    for (const version of API_VERSIONS) expect(version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect([...API_VERSIONS].sort()).toEqual([...API_VERSIONS]);
    expect(new Set(API_VERSIONS).size).toBe(API_VERSIONS.length);
    expect(LATEST_API_VERSION).toBe(API_VERSIONS.at(-1));
    expect(API_VERSIONS).toContain(FIRST_PINNED_API_VERSION);
  });

  it('accept only a listed date', () => {
    expect(isApiVersion('2026-11-01')).toBe(true);
    for (const value of ['2026-11-02', '2026-11-01 ', '', 20261101, null, '2026-11-01T00:00:00Z']) {
      expect(isApiVersion(value)).toBe(false);
      expect(apiVersion.safeParse(value).success).toBe(false);
    }
  });

  it('compare by date', () => {
    expect(compareApiVersions('2026-11-01', '2026-12-01')).toBeLessThan(0);
    expect(compareApiVersions('2026-12-01', '2026-11-01')).toBeGreaterThan(0);
    expect(compareApiVersions('2026-12-01', '2026-12-01')).toBe(0);
  });

  it('list the versions after one, oldest first', () => {
    expect(apiVersionsAfter('2026-11-01')).toEqual(['2026-12-01']);
    expect(apiVersionsAfter(LATEST_API_VERSION)).toEqual([]);
  });

  it('are changed by a body naming one version and nothing else', () => {
    expect(apiVersionChangeInput.safeParse({ version: '2026-12-01' }).success).toBe(true);
    for (const body of [
      {},
      { version: '2026-12-02' },
      { version: ['2026-12-01'] },
      { version: '2026-12-01', force: true },
      null,
    ]) {
      expect(apiVersionChangeInput.safeParse(body).success).toBe(false);
    }
  });
});
