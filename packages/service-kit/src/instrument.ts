/**
 * Preload for service processes (`node --import @pcp/service-kit/instrument main.js`):
 * patches pg, redis, http and undici before the service imports them. node:http imported
 * from ESM is only reachable through the import-in-the-middle loader hook, registered here
 * for just the modules the instrumentations name, so other imports load untouched.
 */
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { register } from 'node:module';
import { registerInstrumentation } from './tracing.js';

const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
registerInstrumentation();
await waitForAllMessagesAcknowledged();
