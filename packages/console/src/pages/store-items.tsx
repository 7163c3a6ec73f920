import { useState } from 'preact/hooks';
import { api, ok, type Store } from '../api.js';
import { formatInstant } from '../components/format.js';
import { fieldText } from '../components/form.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { nextLocalMidnight } from '../components/time.js';
import { useLoad } from '../components/use-load.js';

type Change =
  { itemId: string; available: true } | { itemId: string; available: false; until: string | null };

const ITEM_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Items taken off without a new catalog ("86"): the store's current overrides, each with a
 * switch to put it back on, and a form to take items off until tonight or until put back.
 */
export function StoreItems({ store }: { store: Store }) {
  const storeId = store.storeId;
  const overrides = useLoad(
    () =>
      ok(
        api.GET('/v1/commerce/stores/{storeId}/item-availability', {
          params: { path: { storeId } },
        }),
      ),
    storeId,
  );
  const { run, pending, feedback } = useAction();

  /** Whether the change was made. */
  const apply = async (items: Change[], done: string): Promise<boolean> => {
    const applied = await run(
      () =>
        ok(
          api.PUT('/v1/commerce/stores/{storeId}/item-availability', {
            params: { path: { storeId } },
            body: { items },
          }),
        ),
      done,
    );
    if (applied) overrides.reload();
    return applied;
  };

  const [formError, setFormError] = useState<string>();
  const takeOff = (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const ids = fieldText(form, 'itemIds')
      .split(/[\s,]+/)
      .filter(Boolean);
    const wrong = ids.find((id) => !ITEM_ID.test(id));
    if (ids.length === 0 || wrong !== undefined) {
      setFormError(wrong ? `${wrong} is not an item id (a UUID).` : 'Enter at least one item id.');
      return;
    }
    setFormError(undefined);
    const until =
      fieldText(form, 'until') === 'tonight'
        ? nextLocalMidnight(store.timezone).toISOString()
        : null;
    void apply(
      [...new Set(ids)].map((itemId) => ({ itemId, available: false, until })),
      `${ids.length === 1 ? 'The item is' : `${ids.length} items are`} off ${until ? 'until tonight' : 'until you put them back'}.`,
    ).then((made) => made && form.reset());
  };

  const items = overrides.data?.items ?? [];
  return (
    <div class="panel-stack">
      <article class="card" aria-labelledby="overrides-heading">
        <h2 id="overrides-heading">Unavailable items</h2>
        <p class="muted">
          Carts, validation and placing refuse these with <code>ITEM_UNAVAILABLE</code>. The catalog
          itself does not change.
        </p>
        <ProblemMessage error={overrides.error} />
        {overrides.data && items.length === 0 && (
          <p class="empty">Every item of the active catalog is available.</p>
        )}
        {items.length > 0 && (
          <ul class="list">
            {items.map((item) => (
              <li key={item.itemId} class="list-row">
                <span>
                  <code>{item.itemId}</code>
                  <span class="muted">
                    {' '}
                    {item.until
                      ? `until ${formatInstant(item.until, store.timezone)}`
                      : 'until put back'}
                  </span>
                </span>
                <button
                  type="button"
                  role="switch"
                  aria-checked="false"
                  class="switch"
                  disabled={pending}
                  aria-label={`Item ${item.itemId} available`}
                  onClick={() =>
                    void apply(
                      [{ itemId: item.itemId, available: true }],
                      `Item ${item.itemId} is available again.`,
                    )
                  }
                >
                  <span class="switch-track" aria-hidden="true" />
                  <span class="switch-label">Off</span>
                </button>
              </li>
            ))}
          </ul>
        )}
        {overrides.data && <p class="subtle">Version {overrides.data.version}</p>}
      </article>
      <form class="card form" aria-labelledby="take-off-heading" onSubmit={takeOff}>
        <h2 id="take-off-heading">Take items off</h2>
        <label for="item-ids">Item ids (from your catalog), separated by spaces or commas</label>
        <textarea
          id="item-ids"
          name="itemIds"
          rows={2}
          required
          spellcheck={false}
          aria-invalid={formError ? 'true' : undefined}
          aria-describedby={formError ? 'item-ids-error' : undefined}
        />
        {formError && (
          <p id="item-ids-error" class="field-error">
            {formError}
          </p>
        )}
        <fieldset class="choices">
          <legend>Until</legend>
          <label class="checkbox">
            <input type="radio" name="until" value="tonight" defaultChecked />
            Tonight (midnight, store time)
          </label>
          <label class="checkbox">
            <input type="radio" name="until" value="cleared" />
            Until I put them back
          </label>
        </fieldset>
        <button type="submit" class="button danger" disabled={pending}>
          86 these items
        </button>
        {feedback}
      </form>
    </div>
  );
}
