import { parseContract, subjects } from '@pcp/contracts';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileAcceptsAsIs } from '../../src/carts/cart-input-check.js';

const { cartAdd, cartRemove, cartUpdate } = subjects.ordering;

/** GUIDs as partners send them, and strings that are not quite GUIDs. */
const guidLike = (clean: boolean) =>
  clean
    ? fc.uuid({ version: 4 })
    : fc.oneof(
        fc.uuid({ version: 4 }),
        fc.uuid({ version: 4 }).map((id) => id.toUpperCase()),
        fc.uuid({ version: 4 }).map((id) => `${id}\u0000`),
        fc.uuid({ version: 4 }).map((id) => id.replace(/-/g, '')),
        fc.string({ maxLength: 40 }),
      );

const quantity = (clean: boolean) =>
  clean
    ? fc.integer({ min: -2_147_483_648, max: 2_147_483_647 })
    : fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-0, 2_147_483_648, '2', null, true));

/** Sometimes a key the contract does not have (NUL in it too). */
const extraKeys = (clean: boolean) =>
  clean
    ? fc.constant({})
    : fc.oneof(
        { weight: 4, arbitrary: fc.constant({}) },
        {
          weight: 1,
          arbitrary: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue(), { maxKeys: 2 }),
        },
        { weight: 1, arbitrary: fc.constant({ 'x\u0000': 1 }) },
      );

/** A line nested up to `depth` levels of modifiers (one level beyond the contract's limit). */
const line = (clean: boolean, depth: number): fc.Arbitrary<unknown> =>
  fc
    .record(
      {
        itemId: guidLike(clean),
        lineItemId: guidLike(clean),
        quantity: quantity(clean),
        modifierGroups:
          depth === 0
            ? fc.constant([])
            : fc.array(
                fc.record({
                  modifierGroupId: guidLike(clean),
                  lineItems: fc.array(line(clean, depth - 1), { maxLength: 2 }),
                }),
                { maxLength: 1 },
              ),
      },
      { requiredKeys: clean ? ['itemId', 'lineItemId', 'quantity'] : [] },
    )
    .chain((value) => extraKeys(clean).map((extra) => ({ ...extra, ...value })));

const cart = (clean: boolean) =>
  fc.record({
    catalogSetId: guidLike(clean),
    storeId: guidLike(clean),
    lineItems: fc.array(line(clean, 6), { maxLength: 3 }),
  });

const bodies: Record<'add' | 'remove' | 'update', (clean: boolean) => fc.Arbitrary<unknown>> = {
  add: (clean: boolean) =>
    fc.record(
      {
        item: line(clean, 6),
        cart: fc.option(cart(clean), { nil: null }),
        catalogSetId: fc.option(guidLike(clean), { nil: null }),
        storeId: fc.option(guidLike(clean), { nil: null }),
      },
      { requiredKeys: clean ? ['item'] : [] },
    ),
  remove: (clean: boolean) => fc.record({ cart: cart(clean), lineItemId: guidLike(clean) }),
  update: (clean: boolean) =>
    fc.record({ cart: cart(clean), lineItemId: guidLike(clean), quantity: quantity(clean) }),
};

/** As the subject gets it: JSON text parsed (no undefined, 1e309 is Infinity). */
const asParsed = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null');

describe.each([
  ['add', cartAdd, bodies.add],
  ['remove', cartRemove, bodies.remove],
  ['update', cartUpdate, bodies.update],
] as const)('the compiled check of cart %s', (_name, subject, body) => {
  const acceptsAsIs = compileAcceptsAsIs(subject.request);

  it('accepts only bodies the contract accepts and returns unchanged', () => {
    fc.assert(
      fc.property(
        fc.boolean().chain((clean) => body(clean)),
        (value) => {
          const input = asParsed(value);
          if (!acceptsAsIs(input)) return;
          const parsed = parseContract(subject.request, input);
          expect(parsed.success).toBe(true);
          if (parsed.success) expect(parsed.data).toStrictEqual(input);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('takes the bodies partners usually send: lowercase GUIDs, no other keys, depth within the limit', () => {
    fc.assert(
      fc.property(body(true), (value) => {
        const input = asParsed(value);
        const parsed = parseContract(subject.request, input);
        // Within the contract's limits it is taken as it is; beyond them the contract explains.
        expect(acceptsAsIs(input)).toBe(parsed.success);
      }),
      { numRuns: 200 },
    );
  });
});

describe('what the compiled check leaves to the contract', () => {
  const acceptsAsIs = compileAcceptsAsIs(cartAdd.request);
  const item = { itemId: randomUUID(), lineItemId: randomUUID(), quantity: 1 };

  it('an uppercase GUID, which the contract lowercases', () => {
    const upper = { item: { ...item, itemId: item.itemId.toUpperCase() } };
    expect(acceptsAsIs(upper)).toBe(false);
    const parsed = parseContract(cartAdd.request, upper);
    expect(parsed.success && parsed.data.item.itemId).toBe(item.itemId);
  });

  it('a key the contract strips', () => {
    const extra = { item: { ...item, note: 'no' } };
    expect(acceptsAsIs(extra)).toBe(false);
    expect(parseContract(cartAdd.request, extra)).toMatchObject({ success: true, data: { item } });
  });

  it('takes a plain body as it is', () => {
    expect(
      acceptsAsIs({ item, cart: null, catalogSetId: randomUUID(), storeId: randomUUID() }),
    ).toBe(true);
  });
});
