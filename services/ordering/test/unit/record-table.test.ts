import { describe, expect, it } from 'vitest';
import { buildRecordTable, openRecordTable } from '../../src/catalog/record-table.js';

describe('the compiled catalog record table', () => {
  it('finds every record by its exact key and nothing else', () => {
    const records = Array.from({ length: 5_000 }, (_, index) => [
      `item-${index}`,
      { index, name: `Item ${index}` },
    ]) as [string, unknown][];
    // Keys outside ASCII, an empty key and keys that differ only in length.
    records.push(['café ☕', { index: -1 }], ['', { index: -2 }], ['item-1x', { index: -3 }]);
    const table = openRecordTable(buildRecordTable(records), (record) => record as object);
    for (const [key, value] of records) expect(table.get(key)).toEqual(value);
    expect(table.get('item-5000')).toBeUndefined();
    expect(table.get('cafe ☕')).toBeUndefined();
    expect(table.get('item-1 ')).toBeUndefined();
    // Found again from the decoded records it keeps, not decoded anew.
    expect(table.get('item-7')).toBe(table.get('item-7'));
  });

  it('answers nothing from an empty table', () => {
    const table = openRecordTable(buildRecordTable([]), (record) => record as object);
    expect(table.get('anything')).toBeUndefined();
    expect(table.get('')).toBeUndefined();
  });
});
