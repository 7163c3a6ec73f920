// Preload for `npm run dev -w services/<name>` (`--import @pcp/platform/local-defaults`): the
// environment `npm start` gives a process on a developer's machine (localEnv), for each
// variable the environment does not set already.
import { processorSimulatorDefaultPort } from '@pcp/contracts';
import { localEnv } from './processes.js';

const processorPort = Number(process.env.PROCESSOR_SIMULATOR_PORT ?? processorSimulatorDefaultPort);
for (const [variable, value] of Object.entries(localEnv(processorPort))) {
  process.env[variable] ??= value;
}
