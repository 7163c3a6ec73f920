/**
 * Log hygiene (issue 15): through a whole partner journey (API keys, a failed
 * authentication, a vaulted card, a webhook secret, a card order placed and one that fails
 * at the processor), no line holds a key, a secret, card data or an Authorization value, and
 * every line of a request names the request, its trace and, once known, its partner.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { call } from './http.js';
import { placeCardOrder, startJourney, TEST_CARD, type Journey } from './partner-journey.js';

// The tracer provider the services start with (ids only, nothing exported), before anything
// loads pg, redis or node:http.
await vi.hoisted(async () => {
  await import('@pcp/service-kit/instrument');
  const { startTracing } = await import('@pcp/service-kit');
  startTracing('pcp-test');
});

const logged = capturingLogger('trace');
let journey: Journey;

beforeAll(async () => {
  journey = await startJourney(logged.logger);
});

afterAll(async () => {
  await journey?.close();
});

describe('log lines', () => {
  it('hold no credentials or card data, and carry request, partner and trace ids', async () => {
    const { platform, distribution, commerce } = journey;
    const requests: { requestId: string; partnerId?: string }[] = [];
    const keep = (response: { headers: Headers }, partnerId?: string) =>
      requests.push({ requestId: response.headers.get('x-request-id')!, partnerId });

    // A key with a real key id and a wrong secret, a malformed one, and one in the wrong header.
    const wrongKey = `${distribution.apiKey.slice(0, 21)}${'A'.repeat(43)}`;
    const refusedHeaders: Record<string, string>[] = [
      { authorization: `Bearer ${wrongKey}` },
      { authorization: `Basic ${Buffer.from(`user:${distribution.apiKey}`).toString('base64')}` },
      { 'x-api-key': distribution.apiKey },
    ];
    for (const headers of refusedHeaders) {
      const refused = await fetch(`${platform.baseUrl}/v1/marketfront/orders`, { headers });
      expect(refused.status).toBe(401);
      keep(refused);
    }
    // A vault request the gateway refuses, with the card in its body.
    const invalid = await call(platform.baseUrl, 'POST', '/v1/marketfront/payments/cards', {
      apiKey: distribution.apiKey,
      headers: { 'x-end-user-id': 'buyer-invalid' },
      body: { ...TEST_CARD, expMonth: 13, cardholderName: 'Pat Doe' },
    });
    expect(invalid.status).toBe(400);

    // A card order placed (its webhook delivered), then one the processor fails.
    const placed = await placeCardOrder(journey);
    requests.push({ requestId: placed.requestId, partnerId: distribution.partnerId });
    await journey.receiver.waitFor(1, (request) =>
      JSON.stringify(request.payload).includes(placed.orderId!),
    );
    const failed = await placeCardOrder(journey, {
      expectedStatus: 503,
      beforePlace: () => platform.processor.setFaults({ errorRate: 1 }),
    });
    platform.processor.setFaults({ errorRate: 0 });
    requests.push({ requestId: failed.requestId, partnerId: distribution.partnerId });

    // A console session: refused and made with the key in a body, then used by its cookie.
    const signIn = (apiKey: string) =>
      call(platform.baseUrl, 'POST', '/v1/sessions', { body: { apiKey } });
    expect((await signIn(wrongKey)).status).toBe(401);
    const session = await signIn(commerce.apiKey);
    expect(session.status).toBe(201);
    const sessionCookie = session.headers.getSetCookie()[0]!.split(';')[0]!;
    const byCookie = await call(platform.baseUrl, 'GET', '/v1/commerce/stores', {
      headers: { cookie: sessionCookie, 'x-csrf-token': session.body.csrfToken },
    });
    expect(byCookie.status).toBe(200);

    const text = logged.raw.join('');
    const secrets = {
      commerceKey: commerce.apiKey,
      distributionKey: distribution.apiKey,
      // The part of a key after its id, which alone would do as much harm.
      keySecret: distribution.apiKey.slice(21),
      wrongKey,
      webhookSecret: journey.webhookSecret,
      webhookSecretBytes: journey.webhookSecret.replace(/^whsec_/, ''),
      cardNumber: TEST_CARD.cardNumber,
      processorKey: 'sk_test_simulator',
      basicCredentials: Buffer.from(`user:${distribution.apiKey}`).toString('base64'),
      sessionToken: sessionCookie.slice(sessionCookie.indexOf('=') + 1),
      csrfToken: session.body.csrfToken as string,
    };
    for (const [name, secret] of Object.entries(secrets)) {
      expect(text.includes(secret), `${name} is in the logs`).toBe(false);
    }
    expect(text).not.toMatch(/Bearer (?!\[redacted\])/i);
    expect(text).not.toMatch(/\bpcp_[0-9a-f]{16}_/);
    // Card fields, wherever they sit: never a value but the censor.
    const cardFields = new Set(['cardNumber', 'cvc', 'expMonth', 'expYear', 'authorization']);
    const leaks: string[] = [];
    const visit = (value: unknown, path: string) => {
      if (value === null || typeof value !== 'object') return;
      for (const [key, item] of Object.entries(value)) {
        if (cardFields.has(key) && item !== '[redacted]') leaks.push(`${path}.${key}`);
        visit(item, `${path}.${key}`);
      }
    };
    logged.lines.forEach((line, index) => visit(line, `line ${index}`));
    expect(leaks).toEqual([]);

    // Request-scoped lines: request, trace and span ids; the partner's id once authenticated.
    const scoped = logged.lines.filter((line) => typeof line.requestId === 'string');
    expect(scoped.length).toBeGreaterThan(0);
    for (const line of scoped) {
      expect(line, JSON.stringify(line)).toMatchObject({
        traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
        spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
      });
    }
    for (const { requestId, partnerId } of requests) {
      const lines = scoped.filter((line) => line.requestId === requestId);
      for (const line of lines) expect(line.partnerId, JSON.stringify(line)).toBe(partnerId);
      // One request, one trace, in every service that logged for it.
      expect(new Set(lines.map((line) => line.traceId)).size).toBeLessThanOrEqual(1);
    }
    // The placed order's request was logged by ordering and payments (handlers), and by the
    // JetStream consumer that recorded its webhook, which names the request that caused it.
    const ofPlaced = scoped.filter((line) => line.requestId === placed.requestId);
    expect(
      ofPlaced.filter((line) => line.msg === 'request handled').map((line) => line.subject),
    ).toEqual(
      expect.arrayContaining([
        `${journey.env.prefix}.ordering.v1.orders.place`,
        `${journey.env.prefix}.payments.v1.charges.authorize`,
      ]),
    );
    expect(ofPlaced.some((line) => line.msg === 'message handled')).toBe(true);
    // The failed one by the gateway as it answered 503 (after the handler, on the response).
    expect(
      scoped.find((line) => line.requestId === failed.requestId && line.msg === 'request failed'),
    ).toMatchObject({ partnerId: distribution.partnerId, status: 503 });
  });
});
