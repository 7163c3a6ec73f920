import { defineConfig } from 'vite';

// Preact's JSX through Vite's own transformer (Oxc): no Babel, no plugin.
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // Workspace packages from their TypeScript sources, as the tests read them: no build of
  // theirs goes stale under the console's.
  resolve: {
    dedupe: ['preact'],
    conditions: ['@pcp/source', 'module', 'browser', 'development|production'],
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The CSP has no 'unsafe-inline' and no data: fonts: every asset is a file of its own,
    // and no inline module-preload polyfill (every browser the console supports has it).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
