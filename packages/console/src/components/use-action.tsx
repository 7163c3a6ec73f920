import { useState } from 'preact/hooks';
import { ProblemMessage, problemOf } from './problem.js';

/**
 * A write the user started: `run(action, done)` clears the last outcome, then shows `done`
 * (announced politely) or the API's ProblemDetail; `pending` is true meanwhile, and
 * `feedback` is where the outcome shows.
 */
export function useAction() {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ReturnType<typeof problemOf>>();
  const [notice, setNotice] = useState('');

  /** Whether the action succeeded. */
  const run = async (action: () => Promise<unknown>, done: string): Promise<boolean> => {
    setPending(true);
    setError(undefined);
    setNotice('');
    try {
      await action();
      setNotice(done);
      return true;
    } catch (failure) {
      setError(problemOf(failure));
      return false;
    } finally {
      setPending(false);
    }
  };

  const feedback = (
    <>
      <p class="notice" role="status">
        {notice}
      </p>
      <ProblemMessage error={error} />
    </>
  );
  return { run, pending, feedback };
}
