export * from './availability.js';
export * from './common.js';
export * from './errors.js';
export * from './messaging.js';
export * from './money.js';
export * from './stores.js';
export * from './subjects.js';
