/** Types of nats-values.mjs (used by the NATS values drift test). */

/** The chart values file. */
export const valuesPath: string;
/** The deployment's subject prefix. */
export const deploymentPrefix: string;
/** `text` with its auth block and password variables rendered by `contracts`. */
export function renderValues(
  text: string,
  contracts: typeof import('@pcp/contracts'),
): Promise<string>;
