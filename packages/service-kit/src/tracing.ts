import { NodeSDK } from '@opentelemetry/sdk-node';

/**
 * Start OpenTelemetry when an OTLP endpoint is configured (the SDK reads the standard
 * OTEL_* variables); otherwise the API stays a no-op and costs nothing.
 */
export function startTracing(service: string): { shutdown(): Promise<void> } | undefined {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  process.env.OTEL_SERVICE_NAME ??= service;
  const sdk = new NodeSDK();
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
