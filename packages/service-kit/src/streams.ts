import type { JetStreamManager, StreamConfig } from 'nats';
import type { Logger } from './logger.js';

/** Stream names cannot hold dots; they carry the deployment prefix like subjects do. */
export const streamName = (prefix: string, name: string) => `${prefix}_${name}`;

/** What ensureStream compares between the configured and the live stream (operator-owned). */
const OPERATOR_SETTINGS = ['num_replicas', 'max_age', 'max_bytes', 'max_msgs'] as const;

/**
 * Create the stream with this config, or leave an existing one as it is but for subjects the
 * code needs and it lacks, which are added (safe from many replicas at once). Replicas and
 * limits of an existing stream are never changed: an operator may have set them (`nats
 * stream edit`), and a deploy must not revert that; a difference is logged as a warning.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string; subjects: string[] },
  logger?: Logger,
): Promise<void> {
  let live = await streamInfo(jsm, config.name);
  if (!live) {
    try {
      await jsm.streams.add(config);
      logger?.info({ stream: config.name }, 'stream created');
      return;
    } catch (error) {
      if (!/already in use/i.test(String(error))) throw error;
      live = await streamInfo(jsm, config.name);
      if (!live) throw error;
    }
  }
  const missing = config.subjects.filter((subject) => !live.config.subjects.includes(subject));
  if (missing.length > 0) {
    await jsm.streams.update(config.name, {
      ...live.config,
      subjects: [...live.config.subjects, ...missing],
    });
    logger?.info({ stream: config.name, added: missing }, 'stream subjects added');
  }
  const differences = OPERATOR_SETTINGS.flatMap((key) =>
    config[key] !== undefined && config[key] !== live.config[key]
      ? [{ setting: key, configured: config[key], live: live.config[key] }]
      : [],
  );
  if (differences.length > 0) {
    logger?.warn(
      { stream: config.name, differences },
      'stream settings differ from the configured ones; kept (change them with nats stream edit)',
    );
  }
}

async function streamInfo(jsm: JetStreamManager, name: string) {
  try {
    return await jsm.streams.info(name);
  } catch (error) {
    if (/stream not found/i.test(String(error))) return undefined;
    throw error;
  }
}

/** Where every consumer of a deployment records the messages it gave up on. */
export const deadLetterStream = (prefix: string) => streamName(prefix, 'dead_letters');
export const deadLetterSubject = (prefix: string, durable: string) =>
  `${prefix}.dead-letters.${durable}`;

/**
 * Headers a dead letter adds to the original message's (its data and headers are kept, but
 * for the JetStream publish directives `Nats-*`, so it can be published again as it was).
 */
export const deadLetterHeaders = {
  stream: 'Pcp-Dead-Letter-Stream',
  sequence: 'Pcp-Dead-Letter-Sequence',
  subject: 'Pcp-Dead-Letter-Subject',
  deliveries: 'Pcp-Dead-Letter-Deliveries',
  reason: 'Pcp-Dead-Letter-Reason',
} as const;
