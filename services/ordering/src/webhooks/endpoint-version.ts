// A webhook endpoint's own API version (docs/guide/webhooks.md#api-version): what it may
// subscribe to, and how its deliveries are rendered.
import {
  LATEST_API_VERSION,
  eventDown,
  isApiVersion,
  parseContract,
  requestUpSteps,
  type ApiVersion,
  type VersionedEvent,
  type WebhookEndpointInput,
  type WebhookEventKind,
  webhookEventKind,
} from '@pcp/contracts';
import { requestInvalid } from '@pcp/service-kit';

/**
 * A stored endpoint's version. A date this code does not know (written by a newer ordering,
 * then rolled back) renders in the newest it knows, the nearest to what the partner chose.
 */
export function endpointApiVersion(stored: string): ApiVersion {
  return isApiVersion(stored) ? stored : LATEST_API_VERSION;
}

/**
 * Refuse a registration that `version` could not have made, as that version refused it: each
 * older schema of the body (the store kinds under 2026-11-01) gives the ProblemDetail the
 * gateway gives a request made in that version. The gateway checked the request's own version;
 * the endpoint's may be another (the body's `apiVersion`).
 */
export function checkRegistrationIn(version: ApiVersion, input: WebhookEndpointInput): void {
  for (const step of requestUpSteps(version, 'putWebhook')) {
    if (!step.schema) continue;
    const parsed = parseContract(step.schema, input);
    if (!parsed.success) throw requestInvalid(parsed.error.issues, parsed);
  }
}

/**
 * The body a delivery to an endpoint on `version` carries; undefined when that version does not
 * know the event (it is not delivered). The newest version's is the recorded body itself, with
 * no parse; an older one's is brought down, and the recorded bytes are kept when no change of
 * the versions between touches the event, so the signature covers exactly what was recorded.
 */
export function renderDelivery(version: ApiVersion, body: string): string | undefined {
  if (version === LATEST_API_VERSION) return body;
  const event = JSON.parse(body) as VersionedEvent;
  const older = eventDown(version, event);
  if (older === undefined) return undefined;
  return older === event ? body : JSON.stringify(older);
}

/**
 * The event kinds `version` does not know, none of which is delivered in it: a version knows
 * or not an event by its kind (the store events under 2026-11-01), so a read of a stream log
 * leaves them out in its query rather than after it.
 */
const unknownKinds = new Map<ApiVersion, readonly WebhookEventKind[]>();
export function kindsUnknownIn(version: ApiVersion): readonly WebhookEventKind[] {
  let kinds = unknownKinds.get(version);
  if (!kinds) {
    kinds = webhookEventKind.options.filter((type) => eventDown(version, { type }) === undefined);
    unknownKinds.set(version, kinds);
  }
  return kinds;
}
