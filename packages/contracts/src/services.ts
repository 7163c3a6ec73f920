/**
 * The platform's processes as every runner knows them: `tools/platform` (npm start, the fault
 * and fuzz suites, the benches), docker-compose.yml and the Kubernetes manifests (deploy/test
 * checks both against this table).
 */

/**
 * Each service's ops port (`/health/live`, `/health/ready`, `/metrics`) unless `OPS_PORT` says
 * otherwise, in the order the platform starts them (the gateway last: it calls the others).
 */
export const platformOpsPorts = {
  stores: 9101,
  catalog: 9102,
  ordering: 9103,
  payments: 9104,
  gateway: 9100,
} as const;

/** A service of the platform: the four workers and the gateway. */
export type PlatformService = keyof typeof platformOpsPorts;

/** The services in start order. */
export const platformServices = Object.keys(platformOpsPorts) as readonly PlatformService[];

/** The gateway's public HTTP port unless `PORT` says otherwise. */
export const gatewayDefaultPort = 8080;

/**
 * The card processor simulator's port unless `PORT` says otherwise: it stands in for the card
 * processor outside production and serves `/health` there (it has no ops port of its own).
 */
export const processorSimulatorDefaultPort = 4010;

/** A process of the platform: a service, or the card processor simulator that stands in for the card processor. */
export type PlatformProcess = PlatformService | 'processor-simulator';
