import { z } from 'zod';
import { createProcessorSimulator } from './simulator.js';

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(4010),
  HOST: z.string().min(1).default('127.0.0.1'),
  PROCESSOR_API_KEY: z.string().min(1).default('sk_test_simulator'),
  PROCESSOR_LATENCY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
});

const parsed = envSchema.safeParse(process.env);
if (!parsed.success) {
  const names = parsed.error.issues.map((issue) => issue.path.join('.')).join(', ');
  console.error(`processor simulator: invalid environment variable(s): ${names}`);
  process.exit(1);
}
const config = Object.freeze(parsed.data);

const simulator = createProcessorSimulator({
  apiKey: config.PROCESSOR_API_KEY,
  faults: { latencyMs: config.PROCESSOR_LATENCY_MS },
});
const url = await simulator.listen({ port: config.PORT, host: config.HOST });
// A pino-shaped line, so `npm start` formats it like the services' logs.
console.log(
  JSON.stringify({ level: 30, time: Date.now(), msg: 'processor simulator listening', url }),
);

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
