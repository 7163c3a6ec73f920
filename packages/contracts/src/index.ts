export * from './availability.js';
export * from './common.js';
export * from './errors.js';
export * from './events.js';
export * from './ledger.js';
export * from './messaging.js';
export * from './nats-permissions.js';
export * from './money.js';
export * from './stores.js';
export * from './store-operations.js';
export * from './services.js';
export * from './subjects.js';
export * from './catalog.js';
export * from './cart.js';
export * from './payments.js';
export * from './orders.js';
export * from './webhooks.js';
/** The documents' example store address, shared with the test fixtures and the demo. */
export { exampleStoreAddress } from './examples.js';
