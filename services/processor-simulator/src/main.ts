import { processorSimulatorEnvSchema } from './config.js';
import { createProcessorSimulator, type ProcessorSimulator } from './simulator.js';

const parsed = processorSimulatorEnvSchema.safeParse(process.env);
if (!parsed.success) {
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  console.error(`processor simulator: invalid environment variable(s): ${problems.join('; ')}`);
  process.exit(1);
}
const config = Object.freeze(parsed.data);

// Pino-shaped lines, so `npm start` formats them like the services' logs.
const levels = { info: 30, warn: 40, error: 50 } as const;
const log = (level: keyof typeof levels, msg: string, fields: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ level: levels[level], time: Date.now(), msg, ...fields }));

let simulator: ProcessorSimulator;
try {
  simulator = createProcessorSimulator({
    apiKey: config.PROCESSOR_API_KEY,
    faults: { latencyMs: config.PROCESSOR_LATENCY_MS },
    dataDir: config.PROCESSOR_DATA_DIR,
    fingerprintKey: config.PROCESSOR_FINGERPRINT_KEY,
    log,
  });
} catch (error) {
  // A journal it cannot read: say which line, and do not start on a partial ledger.
  log('error', `processor simulator did not start: ${(error as Error).message}`);
  process.exit(1);
}
const url = await simulator.listen({ port: config.PORT, host: config.HOST });
log('info', 'processor simulator listening', {
  url,
  dataDir: config.PROCESSOR_DATA_DIR ?? null,
  charges: simulator.charges().length,
});

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  simulator.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error('processor simulator: close failed', error);
      process.exit(1);
    },
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
