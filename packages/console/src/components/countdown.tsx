// The time left to accept a pending order, and the clock that ticks it down.
import { useEffect, useState } from 'preact/hooks';
import { formatTime } from './format.js';

/** mm:ss left until `deadline` (00:00 once passed). */
function countdown(deadline: number, now: number): string {
  const seconds = Math.max(0, Math.ceil((deadline - now) / 1_000));
  return `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
}

/** The time now, ticking every second while `ticking` (a pending order counts down). */
export function useNow(ticking: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!ticking) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [ticking]);
  return now;
}

/**
 * The time left to accept, mm:ss, updated every second but hidden from screen readers: they
 * read the deadline once, as a time, rather than a number announced every second.
 */
export function Countdown(props: { deadline: string; now: number; timeZone: string }) {
  const { deadline, now } = props;
  const at = Date.parse(deadline);
  const left = at - now;
  const urgent = left < 60_000;
  return (
    <p class={`countdown${urgent ? ' countdown-urgent' : ''}`}>
      <span class="countdown-label" aria-hidden="true">
        Accept within
      </span>{' '}
      <span class="countdown-time" aria-hidden="true" data-testid="countdown">
        {countdown(at, now)}
      </span>
      <span class="visually-hidden">
        {left > 0 ? 'Accept by ' : 'The time to accept ran out at '}
        <time dateTime={deadline}>{formatTime(deadline, props.timeZone)}</time>
        {urgent && left > 0 ? ', less than a minute left' : ''}
      </span>
    </p>
  );
}
