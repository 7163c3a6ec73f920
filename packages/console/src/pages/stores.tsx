import { useState } from 'preact/hooks';
import { api, ok } from '../api.js';
import { formatInstant, statusLabel } from '../components/format.js';
import { ProblemMessage } from '../components/problem.js';
import { useLoad } from '../components/use-load.js';
import { href } from '../router.js';

const PAGE = 50;

/** The partner's stores, oldest first, a page at a time, with their status and hours. */
export function StoresPage() {
  const [offset, setOffset] = useState(0);
  const stores = useLoad(
    () => ok(api.GET('/v1/commerce/stores', { params: { query: { limit: PAGE, offset } } })),
    String(offset),
  );
  const list = stores.data;
  return (
    <section>
      <h1>Stores</h1>
      <ProblemMessage error={stores.error} />
      {list && list.stores.length === 0 && (
        <p class="empty">
          No stores yet. Create one with <code>PUT /v1/commerce/stores/{'{storeId}'}</code>; it
          shows here at once.
        </p>
      )}
      {list && list.stores.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Your stores, {list.totalCount} in all</caption>
            <thead>
              <tr>
                <th scope="col">Store</th>
                <th scope="col">Status</th>
                <th scope="col">Open now</th>
                <th scope="col">Next opens</th>
                <th scope="col" class="wide-only">
                  Catalog
                </th>
              </tr>
            </thead>
            <tbody>
              {list.stores.map((store) => (
                <tr key={store.storeId}>
                  <th scope="row">
                    <a href={href(`/stores/${store.storeId}`)}>{store.name}</a>
                    <span class="subtle">{store.address.city}</span>
                  </th>
                  <td>
                    <span class={`badge status-${store.status}`}>
                      {statusLabel[store.status] ?? store.status}
                    </span>
                  </td>
                  <td>{store.isOpenNow ? 'Yes' : 'No'}</td>
                  <td>{store.isOpenNow ? '—' : formatInstant(store.nextOpenAt, store.timezone)}</td>
                  <td class="wide-only">{store.catalogSetId ? 'Active' : 'None'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list && (offset > 0 || list.hasMore) && (
        <div class="pager">
          <button
            type="button"
            class="button secondary"
            disabled={offset === 0}
            onClick={() => setOffset(Math.max(0, offset - PAGE))}
          >
            Previous
          </button>
          <span class="muted">
            {offset + 1}–{offset + list.stores.length} of {list.totalCount}
          </span>
          <button
            type="button"
            class="button secondary"
            disabled={!list.hasMore}
            onClick={() => setOffset(offset + PAGE)}
          >
            Next
          </button>
        </div>
      )}
    </section>
  );
}
