import type { ServiceMetrics } from '@pcp/service-kit';

/**
 * A counter's values, or a histogram's observation counts, summed by one label's values:
 * what a test compares before and after the work it drives.
 */
export async function countsBy(
  registry: ServiceMetrics['registry'],
  metric: string,
  label: string,
): Promise<Record<string, number>> {
  const found = registry.getSingleMetric(metric);
  if (!found) throw new Error(`no metric ${metric} in the registry`);
  const { values } = await found.get();
  const counts: Record<string, number> = {};
  for (const value of values) {
    // A histogram's values are its buckets, sum and count, named by metricName.
    const name = (value as { metricName?: string }).metricName ?? metric;
    if (name !== metric && name !== `${metric}_count`) continue;
    const key = String(value.labels[label]);
    counts[key] = (counts[key] ?? 0) + value.value;
  }
  return counts;
}

/** What grew between two `countsBy` readings (labels that did not move are left out). */
export function growth(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([key, value]) => [key, value - (before[key] ?? 0)] as const)
      .filter(([, grew]) => grew !== 0),
  );
}
