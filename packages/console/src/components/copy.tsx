import { useState } from 'preact/hooks';

/**
 * Copies `text` to the clipboard (a request id to quote to support); says it did, or that the
 * browser refused, to screen readers too.
 */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [outcome, setOutcome] = useState<'' | 'Copied' | 'Copy refused'>('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setOutcome('Copied');
    } catch {
      // No clipboard access (an insecure origin, a denied permission): the text stays selectable.
      setOutcome('Copy refused');
    }
  };
  return (
    <>
      <button
        type="button"
        class="button ghost copy-button"
        aria-label={label}
        onClick={() => void copy()}
      >
        Copy
      </button>
      <span class="copy-outcome" role="status">
        {outcome}
      </span>
    </>
  );
}
