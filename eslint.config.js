import js from '@eslint/js';
import importPlugin from 'eslint-plugin-import';
import tseslint from 'typescript-eslint';

const unusedVars = [
  'error',
  { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
];

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/.tsbuild/**',
      '.data/**',
      'deploy/k8s/**',
      'test-results/**',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'process',
          'console',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'URL',
          'Buffer',
          'fetch',
          'AbortSignal',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: { 'no-unused-vars': unusedVars },
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        project: [
          './packages/*/tsconfig.json',
          './services/*/tsconfig.json',
          './tools/*/tsconfig.json',
          './tsconfig.tests.json',
        ],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/no-unused-vars': unusedVars,
    },
  },
  {
    // Each workspace declares what it imports in its own package.json, so it installs and runs
    // alone (the image prunes devDependencies): only tests and tools may use devDependencies.
    files: ['**/*.ts', '**/*.tsx', '**/*.mjs', '**/*.js'],
    plugins: { import: importPlugin },
    rules: {
      'import/no-extraneous-dependencies': [
        'error',
        {
          devDependencies: [
            '**/test/**',
            'e2e/**',
            'packages/testing/**',
            'packages/setup/**',
            'scripts/**',
            'tools/**',
            'deploy/**',
            'packages/*/generate/**',
            'services/gateway/openapi/**',
            '*.config.{ts,js}',
            'packages/console/vite.config.ts',
          ],
          includeTypes: true,
        },
      ],
    },
  },
  {
    // The partner console runs in the browser: its globals, not Node's (TypeScript's DOM lib
    // types them; this tells the JavaScript rules the same).
    files: ['packages/console/src/**'],
    languageOptions: {
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'history', 'localStorage', 'fetch', 'URL'].map(
          (name) => [name, 'readonly'],
        ),
      ),
    },
  },
  {
    // The root package is the monorepo itself: its tests and tools use the workspaces.
    files: ['e2e/**', 'packages/testing/**', 'scripts/**', 'tools/**', 'deploy/**'],
    settings: { 'import/internal-regex': '^@pcp/' },
  },
  {
    // Fastify plugins are async by contract (FastifyPluginAsync), whether or not they await.
    files: ['services/gateway/src/routes/**/*.ts', 'services/gateway/src/plugins/**/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },
  {
    // Tests read arbitrary JSON bodies and assert on them.
    files: ['**/test/**/*.ts', 'e2e/**/*.ts', 'packages/testing/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
