import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ProblemDetail } from '../api.js';
import { problemOf } from './problem.js';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: ProblemDetail | Error | undefined;
  readonly loading: boolean;
  /** Load again (after a change); the data shown stays until the new answer. */
  readonly reload: () => void;
}

interface State<T> {
  readonly data?: T;
  readonly error?: ProblemDetail | Error;
  readonly loading: boolean;
}

/**
 * The answer of `load`, loaded again whenever `key` (what `load` reads, e.g. a store id)
 * changes or `reload` is called; an answer that arrives after a newer load started is dropped.
 */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> {
  const [state, setState] = useState<State<T>>({ loading: true });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => current && setState({ error: problemOf(error), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [key, generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
