import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { startOpsServer, type ReadinessChecks } from '../src/ops-server.js';

const logger = createLogger('ops-test', 'silent');
let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  await close?.();
  close = undefined;
});

async function start(readiness: ReadinessChecks) {
  const metrics = createMetrics('ops-test');
  const server = await startOpsServer({
    port: 0,
    host: '127.0.0.1',
    registry: metrics.registry,
    readiness,
    logger,
  });
  close = server.close;
  expect(server.port).toBeGreaterThan(0);
  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
  return { url, metrics };
}

describe('startOpsServer', () => {
  it('answers /health/ready 503 with the checks when one fails', async () => {
    const { url } = await start(() => Promise.resolve({ a: true, b: false }));
    const response = await fetch(url('/health/ready'));
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: 'unavailable', checks: { a: true, b: false } });
  });

  it('answers /health/ready 200 when every check passes', async () => {
    const { url } = await start(() => Promise.resolve({ a: true, b: true }));
    const response = await fetch(url('/health/ready?verbose=1'));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ status: 'ok', checks: { a: true, b: true } });
  });

  it('answers /health/ready 503 when the readiness check itself fails', async () => {
    const { url } = await start(() => Promise.reject(new Error('db down')));
    const response = await fetch(url('/health/ready'));
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: 'unavailable' });
  });

  it('answers /health/live 200 whatever readiness says', async () => {
    const { url } = await start(() => Promise.resolve({ a: false }));
    const response = await fetch(url('/health/live'));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('serves Prometheus text on /metrics', async () => {
    const { url, metrics } = await start(() => Promise.resolve({}));
    metrics.natsHandlerDuration.labels('stores.v1.get', 'ok').observe(0.002);
    const response = await fetch(url('/metrics'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toContain('# TYPE pcp_nats_handler_duration_seconds histogram');
    expect(text).toContain('pcp_nats_request_duration_seconds');
    expect(text).toMatch(
      /pcp_nats_handler_duration_seconds_count\{[^}]*subject="stores\.v1\.get"[^}]*\} 1/,
    );
    expect(text).toContain('service="ops-test"');
  });

  it('reports each readiness check on /metrics, read at the scrape', async () => {
    let database = true;
    const { url } = await start(() => Promise.resolve({ nats: true, database }));
    const scrape = async () => (await fetch(url('/metrics'))).text();
    expect(await scrape()).toMatch(/pcp_readiness_check\{check="database",service="ops-test"\} 1/);
    database = false;
    const text = await scrape();
    expect(text).toMatch(/pcp_readiness_check\{check="database",service="ops-test"\} 0/);
    expect(text).toMatch(/pcp_readiness_check\{check="nats",service="ops-test"\} 1/);
  });

  it('reports readiness 0 when the readiness check itself fails, and frees the name on close', async () => {
    const { url, metrics } = await start(() => Promise.reject(new Error('db down')));
    expect(await (await fetch(url('/metrics'))).text()).toMatch(
      /pcp_readiness_check\{check="readiness",service="ops-test"\} 0/,
    );
    await close?.();
    close = undefined;
    expect(metrics.registry.getSingleMetric('pcp_readiness_check')).toBeUndefined();
  });

  it('answers an unknown path 404 and a non-GET method 405', async () => {
    const { url } = await start(() => Promise.resolve({ a: true }));
    const unknown = await fetch(url('/nope'));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ status: 'not found' });
    const post = await fetch(url('/health/live'), { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ status: 'method not allowed' });
    const del = await fetch(url('/metrics'), { method: 'DELETE' });
    expect(del.status).toBe(405);
    await del.text();
  });
});
