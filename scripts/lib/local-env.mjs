// The environment every service gets on a developer's machine (`npm start`, `npm run dev`);
// a variable already set wins over these.

/** The card processor simulator's port; services reach it at PAYMENT_PROCESSOR_URL. */
export const processorPort = Number(process.env.PROCESSOR_SIMULATOR_PORT ?? 4010);

export function localServiceEnv() {
  return {
    // Local runs listen on loopback unless told otherwise.
    HOST: '127.0.0.1',
    OPS_HOST: '127.0.0.1',
    // A developer hosts test CatalogSets, store submission URLs and webhook receivers on this
    // machine; production keeps https and public hosts only.
    CATALOG_FETCH_ALLOW_HTTP: 'true',
    CATALOG_FETCH_ALLOWLIST: '127.0.0.0/8,::1/128',
    ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
    ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.0/8,::1/128',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWLIST: '127.0.0.0/8,::1/128',
    PAYMENT_PROCESSOR_URL: `http://127.0.0.1:${processorPort}`,
  };
}
