/**
 * The platform as processes. The benches, `npm start` and the suites call `launchPlatform`;
 * `platformProcesses` is the one list of what runs; `Supervisor` runs any list of specs.
 */
export { launchPlatform, type LaunchedPlatform, type LaunchOptions } from './launch.js';
export {
  localEnv,
  platformProcesses,
  processDefinition,
  type ProcessDefinition,
} from './processes.js';
export { childrenOf, memoryOf, type Memory } from './proc.js';
export { hostAndPort, startTcpProxy } from './tcp-proxy.js';
export {
  developerRestarts,
  Supervisor,
  type Downtime,
  type LogTarget,
  type ProcessSpec,
  type RestartPolicy,
  type SupervisorOptions,
} from './supervisor.js';
