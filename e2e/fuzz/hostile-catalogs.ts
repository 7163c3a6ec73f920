import type { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';

/**
 * Hostile CatalogSet documents and hosts: each case is what a partner's catalog host serves
 * at the callbackUrl, built for one store. `documentError` says whether the document itself
 * is invalid (ingest and the dry run must both say so) or the download fails (or either).
 */
export interface HostileCatalog {
  readonly name: string;
  /** The host's handler for the document's URL, built when called (some are large). */
  readonly serve: () => (request: IncomingMessage, response: ServerResponse) => void;
  /** `invalid`: ingest fails and the dry run says `valid: false`; `any`: either outcome. */
  readonly expect: 'invalid' | 'any';
}

type Document = ReturnType<typeof cartTestCatalog>['document'];

const json =
  (body: string | Uint8Array) =>
  (_request: IncomingMessage, response: ServerResponse): void => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  };

/** A GUID made from `index` (typed as the catalog's ids are, as randomUUID's). */
const uuid = (index: number) =>
  `${index.toString(16).padStart(8, '0')}-0000-4000-8000-${index.toString(16).padStart(12, '0')}` as ReturnType<
    typeof randomUUID
  >;

/** A copy of `document` with `change` applied. */
function edited(document: Document, change: (copy: Document) => void): Document {
  const copy = structuredClone(document);
  change(copy);
  return copy;
}

/** A valid document of the store (fresh ids) with `change` applied. */
const changed = (storeId: string, change: (document: Document) => void): Document =>
  edited(cartTestCatalog(storeId).document, change);

/** `depth` levels of objects (or arrays) around 1, as JSON text. */
export const nested = (depth: number, arrays = false) =>
  arrays
    ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/** Items each in every modifier group, each group offering every item: a reference storm with cycles. */
export function referenceStorm(storeId: string, items: number, groups: number): Document {
  return changed(storeId, (document) => {
    const itemIds = Array.from({ length: items }, (_, index) => uuid(index + 1));
    const groupIds = Array.from({ length: groups }, (_, index) => uuid(1_000_000 + index));
    const section = Object.values(document.sections)[0]!;
    section.itemIds = itemIds;
    document.items = Object.fromEntries(
      itemIds.map((itemId) => [
        itemId,
        { itemId, name: `item ${itemId}`, basePrice: 1, modifierGroupIds: groupIds },
      ]),
    );
    document.modifierGroups = Object.fromEntries(
      groupIds.map((modifierGroupId) => [
        modifierGroupId,
        { modifierGroupId, name: 'group', minimumAllowed: 0, maximumAllowed: 1, itemIds },
      ]),
    );
  });
}

/** Every case at a size given by `scale` (1 = the sizes the issue names). */
export function hostileCatalogs(storeId: string, scale = 1): HostileCatalog[] {
  const valid = cartTestCatalog(storeId).document;
  const text = JSON.stringify(valid);
  const itemId = Object.keys(valid.items)[0]!;
  const big = (count: number) => Math.max(1, Math.round(count * scale));
  return [
    {
      name: 'a field nested 10,000 objects deep',
      serve: () =>
        json(text.replace('"currency":"USD"', `"currency":"USD","extra":${nested(big(10_000))}`)),
      expect: 'any',
    },
    {
      name: 'an item nested 10,000 arrays deep',
      serve: () =>
        json(text.replace(`"items":{`, `"items":{"${uuid(9)}":${nested(big(10_000), true)},`)),
      expect: 'invalid',
    },
    {
      name: 'a document that is 100,000 levels of arrays',
      serve: () => json(nested(big(100_000), true)),
      expect: 'invalid',
    },
    {
      name: 'a section listing 150,000 item ids (over the 100,000 limit)',
      serve: () =>
        json(
          JSON.stringify(
            changed(storeId, (document) => {
              Object.values(document.sections)[0]!.itemIds = Array.from(
                { length: big(150_000) },
                (_, index) => uuid(index),
              );
            }),
          ),
        ),
      expect: 'invalid',
    },
    {
      name: 'more items than the limit (100,001)',
      serve: () =>
        json(
          JSON.stringify(
            changed(storeId, (document) => {
              const many = Object.fromEntries(
                Array.from({ length: big(100_001) }, (_, index) => {
                  const id = uuid(index + 10);
                  return [id, { itemId: id, name: 'x', basePrice: 1 }];
                }),
              );
              document.items = { ...document.items, ...many };
            }),
          ),
        ),
      expect: scale >= 1 ? 'invalid' : 'any',
    },
    {
      name: 'a reference storm: 400 items × 400 modifier groups referencing each other',
      serve: () => json(JSON.stringify(referenceStorm(storeId, big(400), big(400)))),
      expect: 'invalid',
    },
    {
      name: 'duplicate ids: a key twice, a key in another case, an id listed twice',
      serve: () =>
        json(
          text
            .replace(
              `"items":{`,
              `"items":{"${itemId}":{"itemId":"${itemId}","name":"dup","basePrice":-1},"${itemId.toUpperCase()}":{"itemId":"${itemId.toUpperCase()}","name":"case","basePrice":1},`,
            )
            .replace(`"itemIds":["`, `"itemIds":["${itemId}","${itemId}","`),
        ),
      expect: 'invalid',
    },
    {
      name: '__proto__ and constructor as dictionary keys',
      serve: () =>
        json(
          text.replace(
            `"items":{`,
            `"items":{"__proto__":{"itemId":"__proto__","name":"p","basePrice":1},"constructor":{"prototype":{"x":1}},`,
          ),
        ),
      expect: 'invalid',
    },
    {
      name: 'a 20 MB item name',
      serve: () =>
        json(
          JSON.stringify(
            edited(valid, (document) => {
              document.items[itemId]!.name = 'n'.repeat(big(20 * 1024 * 1024));
            }),
          ),
        ),
      expect: 'invalid',
    },
    {
      name: 'bytes that are not UTF-8 in a name, and NUL in another',
      serve: () => {
        const [before, after = ''] = text.split('"name":"Burger"');
        return json(
          Buffer.concat([
            Buffer.from(`${before}"name":"Bur`),
            Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]),
            Buffer.from(`ger"${after.replace('"name":"Soda"', '"name":"So\\u0000da"')}`),
          ]),
        );
      },
      expect: 'invalid',
    },
    {
      name: 'numbers at the edges as prices (1e309, -0, 2^53+1, 1e-400)',
      serve: () =>
        json(
          text
            .replace('"basePrice":9.5', '"basePrice":1e309')
            .replace('"basePrice":1.99', '"basePrice":-0')
            .replace('"basePrice":6', '"basePrice":9007199254740993')
            .replace('"basePrice":1.25', '"basePrice":1e-400'),
        ),
      expect: 'invalid',
    },
    {
      name: 'a body that never ends (64 KB chunks as fast as they are read)',
      serve: () => (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        response.write('{"x":"');
        const pump = () => {
          while (!response.destroyed && response.write(chunk));
          if (!response.destroyed) response.once('drain', pump);
        };
        pump();
      },
      expect: 'invalid',
    },
    {
      name: 'a slow drip: one byte every 200 ms, forever',
      serve: () => (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => response.write(' '), 200);
        response.on('close', () => clearInterval(timer));
      },
      expect: 'invalid',
    },
  ];
}
