// How the document shows a route only test keys may call (`testOnly: true` in its config,
// plugins/auth.ts; docs/guide/sandbox.md#test-helpers).

/** The tag every test-only operation carries, beside its own. */
export const SANDBOX_TAG = 'Sandbox';

/** The operation extension that marks a test-only operation: `"x-pcp-test-only": true`. */
export const TEST_ONLY_EXTENSION = 'x-pcp-test-only';
