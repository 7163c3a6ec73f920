import { ApiProblem, type ProblemDetail } from '../api.js';

/** What went wrong, as an ApiProblem's ProblemDetail, or a plain error's message. */
export function problemOf(error: unknown): ProblemDetail | Error {
  if (error instanceof ApiProblem) return error.problem;
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * A refused request, shown with its code, what the platform said, the fields it pointed at
 * and a link to the code's page in the docs; announced to screen readers.
 */
export function ProblemMessage({ error }: { error: ProblemDetail | Error | undefined }) {
  if (!error) return null;
  if (error instanceof Error) {
    return (
      <div class="problem" role="alert">
        <p class="problem-title">Something went wrong</p>
        <p>{error.message}</p>
      </div>
    );
  }
  const docs = error.type.startsWith('http') ? error.type : undefined;
  return (
    <div class="problem" role="alert">
      <p class="problem-title">
        <code class="problem-code">{error.errorCode}</code> {error.title}
        {error.status > 0 && <span class="problem-status"> · HTTP {error.status}</span>}
      </p>
      <p>{error.detail}</p>
      {error.errors && error.errors.length > 0 && (
        <ul class="problem-errors">
          {error.errors.map((item, index) => (
            <li key={index}>
              {item.pointer && <code>{item.pointer}</code>} {item.message}
            </li>
          ))}
        </ul>
      )}
      <p class="problem-meta">
        {docs && (
          <a href={docs} target="_blank" rel="noreferrer">
            What {error.errorCode} means
          </a>
        )}
        {error.requestId && (
          <span>
            Request id <code>{error.requestId}</code>
          </span>
        )}
      </p>
    </div>
  );
}
