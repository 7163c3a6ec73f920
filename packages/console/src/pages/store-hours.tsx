import { useState } from 'preact/hooks';
import { api, ok, type SpecialHours, type Store, type WeeklyWindow } from '../api.js';
import { fieldText } from '../components/form.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { localDate } from '../components/time.js';
import { useLoad } from '../components/use-load.js';

const days = [
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
  'Sunday',
] as const satisfies readonly WeeklyWindow['dayOfWeek'][];

/** `08:00:00` as a time input shows it, and back. */
const toInput = (time: string) => time.slice(0, 5);
const fromInput = (time: string) => (time.length === 5 ? `${time}:00` : time);

/** The profile fields a PUT takes, from a read store (computed fields left out). */
function profileOf(store: Store, availability: WeeklyWindow[]) {
  return {
    name: store.name,
    phone: store.phone,
    timezone: store.timezone,
    currency: store.currency,
    address: store.address,
    fulfillmentTypes: store.fulfillmentTypes,
    availability,
    delivery: store.delivery,
    pickup: store.pickup,
    taxRate: store.taxRate,
    minimumOrder: store.minimumOrder,
    orderSubmissionUrl: store.orderSubmissionUrl,
    acceptanceWindowSeconds: store.acceptanceWindowSeconds,
  };
}

/** A store's weekly opening hours and the dates whose hours differ. */
export function StoreHours({ store, onChange }: { store: Store; onChange: () => void }) {
  return (
    <div class="panel-stack">
      <WeeklyHours store={store} onChange={onChange} />
      <SpecialHoursPanel store={store} />
    </div>
  );
}

function WeeklyHours({ store, onChange }: { store: Store; onChange: () => void }) {
  const [windows, setWindows] = useState<WeeklyWindow[]>(() => store.availability ?? []);
  const { run, pending: saving, feedback } = useAction();

  const update = (index: number, field: 'start' | 'end', value: string) =>
    setWindows(windows.map((w, i) => (i === index ? { ...w, [field]: fromInput(value) } : w)));

  const save = async (event: Event) => {
    event.preventDefault();
    const saved = await run(
      () =>
        ok(
          api.PUT('/v1/commerce/stores/{storeId}', {
            params: { path: { storeId: store.storeId } },
            body: profileOf(store, windows),
          }),
        ),
      'Weekly hours saved.',
    );
    if (saved) onChange();
  };

  return (
    <form class="card" aria-labelledby="weekly-heading" onSubmit={(event) => void save(event)}>
      <h2 id="weekly-heading">Weekly hours</h2>
      <p class="muted">
        In the store's time zone, {store.timezone}. A day without hours is closed; an end of 00:00
        is midnight.
      </p>
      <div class="week">
        {days.map((day) => {
          const ofDay = windows
            .map((window, index) => ({ window, index }))
            .filter(({ window }) => window.dayOfWeek === day);
          return (
            <fieldset key={day} class="day">
              <legend>{day}</legend>
              {ofDay.length === 0 && <span class="muted">Closed</span>}
              {ofDay.map(({ window, index }, n) => (
                <div key={index} class="window">
                  <TimeField
                    label={`${day} window ${n + 1} opens`}
                    value={window.start}
                    onChange={(value) => update(index, 'start', value)}
                  />
                  <span aria-hidden="true">–</span>
                  <TimeField
                    label={`${day} window ${n + 1} closes`}
                    value={window.end}
                    onChange={(value) => update(index, 'end', value)}
                  />
                  <button
                    type="button"
                    class="button ghost"
                    aria-label={`Remove ${day} window ${n + 1}`}
                    onClick={() => setWindows(windows.filter((_, i) => i !== index))}
                  >
                    ✕
                  </button>
                </div>
              ))}
              <button
                type="button"
                class="button link"
                onClick={() =>
                  setWindows([...windows, { dayOfWeek: day, start: '09:00:00', end: '17:00:00' }])
                }
              >
                Add hours<span class="visually-hidden"> on {day}</span>
              </button>
            </fieldset>
          );
        })}
      </div>
      <button type="submit" class="button primary" disabled={saving}>
        Save weekly hours
      </button>
      {feedback}
    </form>
  );
}

/** A time input labelled for screen readers only (the day's legend says the rest). */
function TimeField(props: { label: string; value: string; onChange: (value: string) => void }) {
  return (
    <label>
      <span class="visually-hidden">{props.label}</span>
      <input
        type="time"
        value={toInput(props.value)}
        required
        onInput={(event) => props.onChange(event.currentTarget.value)}
      />
    </label>
  );
}

type SpecialDay = SpecialHours['days'][number];

function describeDay(day: SpecialDay): string {
  if ('closed' in day && day.closed) return 'Closed all day';
  if ('windows' in day && day.windows) {
    return day.windows.map((w) => `${toInput(w.start)}–${toInput(w.end)}`).join(', ');
  }
  return '—';
}

function SpecialHoursPanel({ store }: { store: Store }) {
  const storeId = store.storeId;
  const special = useLoad(
    () =>
      ok(api.GET('/v1/commerce/stores/{storeId}/special-hours', { params: { path: { storeId } } })),
    storeId,
  );
  const { run, feedback } = useAction();
  const [closed, setClosed] = useState(true);

  const put = async (days: SpecialDay[], done: string) => {
    const saved = await run(
      () =>
        ok(
          api.PUT('/v1/commerce/stores/{storeId}/special-hours', {
            params: { path: { storeId } },
            body: { days },
          }),
        ),
      done,
    );
    if (saved) special.reload();
  };

  const current = special.data?.days ?? [];
  const add = (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const date = fieldText(form, 'date');
    const day: SpecialDay = closed
      ? { date, closed: true }
      : {
          date,
          windows: [
            { start: fromInput(fieldText(form, 'start')), end: fromInput(fieldText(form, 'end')) },
          ],
        };
    const others = current.filter((existing) => existing.date !== date);
    void put(
      [...others, day].sort((a, b) => a.date.localeCompare(b.date)),
      `Special hours for ${date} saved.`,
    );
  };

  return (
    <article class="card" aria-labelledby="special-heading">
      <h2 id="special-heading">Special hours</h2>
      <p class="muted">Dates whose hours replace the weekly ones: holidays, events, closures.</p>
      <ProblemMessage error={special.error} />
      {special.data && current.length === 0 && <p class="empty">No special hours.</p>}
      {current.length > 0 && (
        <ul class="list">
          {current.map((day) => (
            <li key={day.date} class="list-row">
              <span>
                <strong>{day.date}</strong> <span class="muted">{describeDay(day)}</span>
              </span>
              <button
                type="button"
                class="button ghost"
                onClick={() =>
                  void put(
                    current.filter((other) => other.date !== day.date),
                    `Special hours for ${day.date} removed.`,
                  )
                }
              >
                Remove<span class="visually-hidden"> {day.date}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <form class="inline-form" onSubmit={add}>
        <label>
          Date
          <input type="date" name="date" required min={localDate(store.timezone)} />
        </label>
        <label class="checkbox">
          <input
            type="checkbox"
            checked={closed}
            onChange={(event) => setClosed(event.currentTarget.checked)}
          />
          Closed all day
        </label>
        {!closed && (
          <>
            <label>
              Opens
              <input type="time" name="start" required defaultValue="10:00" />
            </label>
            <label>
              Closes
              <input type="time" name="end" required defaultValue="16:00" />
            </label>
          </>
        )}
        <button type="submit" class="button secondary">
          Add special hours
        </button>
      </form>
      {feedback}
    </article>
  );
}
