// The baselines the benches measure the platform against in the same run: a bare Fastify
// route, and the architecture's floor (Fastify passing the body over NATS to a responder,
// doing the platform's I/O with none of its work), each answering a fixed body.
import { randomUUID } from 'node:crypto';
import type { BenchPlatform } from '../platform/bench-platform.js';
import { startFloorChild } from './child.js';

/** The bare Fastify baseline answering `responseBody`; resolves its base URL. */
export async function startBaseline(platform: BenchPlatform, responseBody: string) {
  const { port } = await startFloorChild<{ port: number }>(
    platform,
    'fastify',
    'floors/bare-fastify.child.ts',
    responseBody,
  );
  return `http://127.0.0.1:${port}`;
}

/**
 * The floor answering `responseBody`: a forwarder and responder named `${prefix}forwarder`
 * and `${prefix}responder`; resolves the forwarder's base URL (any POST path).
 */
export async function startFloor(
  platform: BenchPlatform,
  responseBody: string,
  { prefix = '', json = false } = {},
): Promise<string> {
  const env = {
    FLOOR_SUBJECT: `bench_floor_${randomUUID()}`,
    ...(json ? { FLOOR_JSON: 'true' } : {}),
  };
  await startFloorChild(
    platform,
    `${prefix}responder`,
    'floors/floor-responder.child.ts',
    responseBody,
    env,
  );
  const { port } = await startFloorChild<{ port: number }>(
    platform,
    `${prefix}forwarder`,
    'floors/floor-forwarder.child.ts',
    '',
    env,
  );
  return `http://127.0.0.1:${port}`;
}
