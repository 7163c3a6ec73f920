/**
 * The alert rules (deploy/prometheus) and the Grafana dashboard (deploy/grafana) checked
 * against the platform: every metric they name is exported by a live /metrics of the
 * running services, and the rules (and the dashboard's queries) pass promtool, which
 * `npm test`'s set-up installs (without it those checks fail, saying how to install it).
 */
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOpsServer } from '@pcp/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { call } from '../../e2e/http.js';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startServiceProcess } from '@pcp/testing/service-process';

const DEPLOY = fileURLToPath(new URL('../', import.meta.url));
const ALERTS = join(DEPLOY, 'prometheus/alerts.yaml');
const ALERT_TESTS = join(DEPLOY, 'prometheus/alerts.test.yaml');
const DASHBOARD = join(DEPLOY, 'grafana/pcp-overview.json');

/** Series Prometheus makes itself for each target, not exported by any service. */
const PROMETHEUS_OWN = new Set(['up']);

/** PromQL words that look like metric names: aggregations, modifiers, operators. */
const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects. Label matchers, grouping labels, ranges
 * and strings are dropped first; of the identifiers left, those called (followed by `(`)
 * are functions or aggregations.
 */
function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of bare.matchAll(/(?<![\w$.])([a-zA-Z_:][\w:]*)(\s*\()?/g)) {
    const [, name, called] = match;
    if (called || PROMQL_WORDS.has(name!.toLowerCase())) continue;
    names.add(name!);
  }
  return [...names].sort();
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}

function alertExpressions(): { name: string; expr: string }[] {
  const doc = parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((group) =>
    group.rules.map((rule) => ({ name: rule.alert ?? rule.record ?? '?', expr: rule.expr })),
  );
}

interface Panel {
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

function dashboard() {
  return JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    uid: string;
    panels: Panel[];
    templating: { list: { name: string; query?: string | { query: string } }[] };
  };
}

/** Every query of the dashboard: its panels' targets and its variables' queries. */
function dashboardExpressions(): { name: string; expr: string }[] {
  const board = dashboard();
  const panels = board.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
  const targets = panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ name: panel.title, expr: target.expr })),
  );
  const variables = board.templating.list.flatMap((variable) => {
    const query = typeof variable.query === 'string' ? variable.query : variable.query?.query;
    // label_values(metric, label): the metric is PromQL, the label is not.
    const metric = query?.match(/^label_values\((.+),\s*\w+\)$/)?.[1];
    return metric ? [{ name: `$${variable.name}`, expr: metric }] : [];
  });
  return [...targets, ...variables];
}

/** Grafana's macros and variables replaced by what Prometheus would receive. */
const asPromQl = (expr: string) =>
  expr.replace(/\$__rate_interval|\$__interval|\$__range/g, '5m').replace(/\$\{?\w+\}?/g, '.*');

/** Metric names in Prometheus text: a histogram's family exports _bucket, _sum and _count. */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = line.match(/^# TYPE (\S+) (\S+)$/);
    if (type) {
      const [, family, kind] = type;
      names.add(family!);
      if (kind === 'histogram' || kind === 'summary') {
        for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${family}${suffix}`);
      }
      continue;
    }
    const sample = line.match(/^([a-zA-Z_:][\w:]*)[{ ]/);
    if (sample) names.add(sample[1]!);
  }
  return names;
}

/**
 * The /metrics text of `url` once it holds `needs` (a process takes a few seconds to boot).
 * Plain polling: expect.poll is not available in beforeAll.
 */
async function scrape(url: string, needs: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${url}/metrics`).catch(() => undefined);
    const text = response?.ok ? await response.text() : '';
    if (text.includes(needs)) return text;
    if (Date.now() > deadline) throw new Error(`${url}/metrics never showed ${needs}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('metricNamesOf', () => {
  it('finds the selected metrics, not functions, labels, ranges or variables', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.99, sum by (route, le) (rate(pcp_x_bucket{status=~"5..", route="a b"}[$__rate_interval])))' +
          ' / on (route) group_left sum without (pod) (pcp_y_total offset 5m) > bool 0.5 and up == 0',
      ),
    ).toEqual(['pcp_x_bucket', 'pcp_y_total', 'up']);
    expect(metricNamesOf('max(pcp_g) == 2')).toEqual(['pcp_g']);
  });
});

describe('the alert rules and the dashboard', () => {
  let env: TestEnvironment;
  let platform: TestPlatform;
  let child: ChildProcess | undefined;
  const closers: (() => Promise<void>)[] = [];
  /** Every name any process exported. */
  const exported = new Set<string>();

  beforeAll(async () => {
    env = await createTestEnvironment();
    platform = await startPlatform(env);
    // A little traffic through the gateway, NATS, a service and its database.
    const partner = await platform.newPartner('commerce');
    const storeId = crypto.randomUUID();
    const put = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
      apiKey: partner.apiKey,
      body: storeProfile(),
    });
    expect(put.status).toBe(201);
    const missing = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}x`, {
      apiKey: partner.apiKey,
    });
    expect(missing.status).toBeGreaterThanOrEqual(400);

    // Each in-process service's registry behind an ops port, as runService serves it (the
    // gateway has its own ops port).
    const urls = [platform.gateway.opsUrl()];
    for (const [service, metrics] of platform.metrics) {
      const ops = await startOpsServer({
        port: 0,
        host: '127.0.0.1',
        registry: metrics.registry,
        readiness: () => Promise.resolve({ subjects: true }),
        logger: env.logger,
      });
      closers.push(ops.close);
      urls.push(`http://127.0.0.1:${ops.port}`);
      expect(service).not.toBe('gateway');
    }
    // One service as its own process: the process metrics only a real process exports.
    const opsPort = await freePort();
    child = startServiceProcess('stores', env, {
      OPS_PORT: String(opsPort),
      OPS_HOST: '127.0.0.1',
    });
    const processUrl = `http://127.0.0.1:${opsPort}`;

    for (const url of [...urls, processUrl]) {
      const text = await scrape(url, url === processUrl ? 'process_cpu_seconds_total' : 'pcp_');
      for (const name of exportedNames(text)) exported.add(name);
    }
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    for (const close of closers) await close();
    await platform?.stop();
    await env?.cleanup();
  });

  it('scraped what every panel group needs (the scrape itself worked)', () => {
    for (const name of [
      'pcp_http_request_duration_seconds_bucket',
      'pcp_nats_handler_duration_seconds_count',
      'pcp_catalog_ingest_run_duration_seconds_count',
      'pcp_place_idempotency_total',
      'pcp_payment_processor_breaker_state',
      'pcp_webhook_delivery_lag_seconds_bucket',
      'pcp_consumer_backlog_messages',
      'pcp_readiness_check',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
    ]) {
      expect(exported, name).toContain(name);
    }
  });

  it.each([
    ['alerts.yaml', alertExpressions],
    ['pcp-overview.json', dashboardExpressions],
  ])('%s names only metrics a live /metrics exports', (_file, expressions) => {
    const used = expressions();
    expect(used.length).toBeGreaterThan(10);
    const missing = used.flatMap(({ name, expr }) =>
      metricNamesOf(asPromQl(expr))
        .filter((metric) => !exported.has(metric) && !PROMETHEUS_OWN.has(metric))
        .map((metric) => `${name}: ${metric}`),
    );
    expect(missing).toEqual([]);
    // Every query selects a metric: none is a constant by mistake.
    for (const { name, expr } of used) expect(metricNamesOf(asPromQl(expr)), name).not.toEqual([]);
  });
});

/** promtool from Debian's `prometheus` package, which `npm test`'s set-up installs. */
function runPromtool(...args: string[]) {
  if (spawnSync('promtool', ['--version']).status !== 0) {
    throw new Error('promtool is missing: npm test installs it (or apt-get install prometheus)');
  }
  return execFileSync('promtool', args, { encoding: 'utf8', stdio: 'pipe' });
}

describe('promtool', () => {
  it('checks the alert rules', () => {
    expect(runPromtool('check', 'rules', ALERTS)).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('runs the rules’ unit tests', () => {
    expect(runPromtool('test', 'rules', ALERT_TESTS)).toMatch(/SUCCESS/);
  });

  it('parses every dashboard query', () => {
    // Each query as a recording rule, so promtool parses it as Prometheus would run it.
    const rules = dashboardExpressions().map(({ expr }, index) => ({
      record: `dashboard:query_${index}`,
      expr: asPromQl(expr),
    }));
    const dir = mkdtempSync(join(tmpdir(), 'pcp-dashboard-'));
    try {
      const file = join(dir, 'queries.yaml');
      writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules }] }));
      expect(runPromtool('check', 'rules', file)).toContain(`SUCCESS: ${rules.length} rules`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a broken rule (the check can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcp-rules-'));
    try {
      const file = join(dir, 'broken.yaml');
      writeFileSync(
        file,
        stringify({ groups: [{ name: 'g', rules: [{ alert: 'A', expr: 'sum(rate(x[5m])' }] }] }),
      );
      expect(() => runPromtool('check', 'rules', file)).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
