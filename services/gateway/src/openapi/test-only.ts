declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Only test keys may call the route (docs/guide/sandbox.md#test-helpers): a live key is 403
     * FORBIDDEN. The document marks the operation with `x-pcp-test-only` and the Sandbox tag.
     */
    testOnly?: true;
  }
}

/** The tag every test-only operation carries, beside its own. */
export const SANDBOX_TAG = 'Sandbox';

/** The operation extension that marks a test-only operation: `"x-pcp-test-only": true`. */
export const TEST_ONLY_EXTENSION = 'x-pcp-test-only';
