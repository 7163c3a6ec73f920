/**
 * The simulator kept in a data folder (PROCESSOR_DATA_DIR): a restart remembers its cards,
 * charges, answered keys and fingerprints; the journal survives a torn last line, stays
 * bounded and never holds card data. Real files in a temporary folder.
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createProcessorSimulator,
  testCards,
  type ProcessorSimulator,
  type ProcessorSimulatorOptions,
} from '../src/simulator.js';
import { processorSimulatorEnvSchema } from '../src/config.js';

const API_KEY = 'sk_test_simulator';

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
  text: string;
  replayed: boolean;
}

let dataDir: string;
const running: ProcessorSimulator[] = [];
let keySeq = 0;
const newKey = () => `key-${++keySeq}`;

/** A simulator on `dataDir` and a client for it. */
async function start(options: ProcessorSimulatorOptions = {}) {
  const sim = createProcessorSimulator({ apiKey: API_KEY, dataDir, ...options });
  running.push(sim);
  const base = await sim.listen();
  const call = async (method: string, path: string, body?: unknown, key?: string) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        ...(method === 'POST' ? { 'idempotency-key': key ?? newKey() } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : undefined,
      text,
      replayed: response.headers.get('idempotent-replayed') === 'true',
    } satisfies Answer;
  };
  const post = (path: string, body: unknown, key?: string) => call('POST', path, body, key);
  return {
    sim,
    base,
    post,
    get: (path: string) => call('GET', path),
    async tokenize(number: string = testCards.success, cvc = '123', key?: string) {
      const answer = await post('/v1/tokens', { number, expMonth: 12, expYear: 2030, cvc }, key);
      expect(answer.status).toBe(201);
      return answer.body as { token: string; fingerprint: string };
    },
    authorize: (token: string, amount = 1_000, key?: string, reference?: string) =>
      post('/v1/authorizations', { token, amount, currency: 'EUR', reference }, key),
    /** Stop it as a restart does (the journal closed, nothing flushed that was not written). */
    async stop() {
      await sim.close();
      running.splice(running.indexOf(sim), 1);
    },
  };
}

const journalPath = () => join(dataDir, 'journal.jsonl');
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- journal lines are JSON
const journalLines = (): Record<string, any>[] =>
  readFileSync(journalPath(), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** Every file under `dir`, as bytes. */
const filesUnder = (dir: string): { path: string; bytes: Buffer }[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return { path, bytes: readFileSync(path) };
    });

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pcp-simulator-'));
});
afterEach(async () => {
  for (const sim of running.splice(0)) await sim.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a restart', () => {
  it('keeps cards, charges in every state and fingerprints; the charges go on from where they were', async () => {
    const first = await start();
    const card = await first.tokenize();
    const declining = await first.tokenize(testCards.insufficientFunds);
    const captured = (await first.authorize(card.token, 1_000)).body.id as string;
    expect((await first.post(`/v1/authorizations/${captured}/capture`, {})).status).toBe(200);
    const refunded = (await first.authorize(card.token, 1_000, undefined, 'order-7')).body
      .id as string;
    await first.post(`/v1/authorizations/${refunded}/capture`, { amount: 800 });
    expect((await first.post('/v1/refunds', { authorization: refunded, amount: 300 })).status).toBe(
      201,
    );
    const voided = (await first.authorize(card.token)).body.id as string;
    await first.post(`/v1/authorizations/${voided}/void`, {});
    expect((await first.authorize(declining.token)).status).toBe(402);
    const before = first.sim.charges();
    expect(before.map((charge) => charge.status)).toEqual([
      'captured',
      'partially_refunded',
      'voided',
      'declined',
    ]);
    await first.stop();

    const second = await start();
    expect(second.sim.charges()).toEqual(before);
    // What the issue saw fail: a captured charge refunded after the restart.
    expect(
      (await second.post('/v1/refunds', { authorization: captured, amount: 100 })).status,
    ).toBe(201);
    expect(
      (await second.post('/v1/refunds', { authorization: refunded, amount: 500 })).status,
    ).toBe(201);
    const capture = await second.post(`/v1/authorizations/${voided}/capture`, {});
    expect(capture.body.error.code).toBe('authorization_not_capturable');
    expect((await second.get(`/v1/authorizations/${refunded}`)).body).toMatchObject({
      status: 'refunded',
      capturedAmount: 800,
      refundedAmount: 800,
    });
    const found = await second.get('/v1/authorizations?reference=order-7');
    expect(found.body.authorizations.map((auth: { id: string }) => auth.id)).toEqual([refunded]);
    // The cards: still usable, the scripted one still declines, the same card the same print.
    expect((await second.authorize(card.token)).status).toBe(201);
    const declined = await second.authorize(declining.token);
    expect(declined.body.error.code).toBe('insufficient_funds');
    expect((await second.tokenize()).fingerprint).toBe(card.fingerprint);
    expect((await second.tokenize(testCards.declined)).fingerprint).not.toBe(card.fingerprint);
  });

  it('replays answered keys, a lost answer too, and never executes them twice', async () => {
    const first = await start();
    const tokenKey = newKey();
    const card = await first.tokenize(testCards.success, '123', tokenKey);
    const authorizeKey = newKey();
    const authorized = await first.authorize(card.token, 500, authorizeKey);
    const captureKey = newKey();
    const captured = await first.post(
      `/v1/authorizations/${authorized.body.id}/capture`,
      {},
      captureKey,
    );
    // Executed and saved, its answer lost on the way (the client gave up first).
    first.sim.setFaults({ slowRate: 1, slowMs: 5_000, operations: ['refund'] });
    const refundKey = newKey();
    const refund = { authorization: authorized.body.id as string, amount: 200 };
    await expect(
      fetch(`${first.base}/v1/refunds`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'idempotency-key': refundKey,
          'content-type': 'application/json',
        },
        body: JSON.stringify(refund),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    await first.stop();

    const second = await start();
    const again = {
      token: await second.post(
        '/v1/tokens',
        { number: testCards.success, expMonth: 12, expYear: 2030, cvc: '123' },
        tokenKey,
      ),
      authorization: await second.authorize(card.token, 500, authorizeKey),
      capture: await second.post(
        `/v1/authorizations/${authorized.body.id}/capture`,
        {},
        captureKey,
      ),
      refund: await second.post('/v1/refunds', refund, refundKey),
    };
    expect(Object.values(again).map((answer) => answer.replayed)).toEqual([true, true, true, true]);
    expect(again.token.body).toEqual(card);
    expect(again.authorization.text).toBe(authorized.text);
    expect(again.capture.text).toBe(captured.text);
    expect(again.refund).toMatchObject({ status: 201, body: { amount: 200, status: 'succeeded' } });
    expect(second.sim.charges()).toMatchObject([
      { status: 'partially_refunded', refundedAmount: 200 },
    ]);
    // The same key with another body is still refused.
    expect((await second.authorize(card.token, 501, authorizeKey)).status).toBe(422);
  });

  it('keeps a key 24 h from its answer and the newest maxRecords of each kind', async () => {
    const first = await start();
    const card = await first.tokenize();
    for (let i = 0; i < 5; i++) await first.authorize(card.token, 100 + i);
    const key = newKey();
    await first.authorize(card.token, 999, key);
    await first.stop();
    // Its answer a day and a minute old.
    const aged = journalLines().map((line) =>
      line.key?.key === key
        ? { ...line, key: { ...line.key, answeredAt: Date.now() - 86_460_000 } }
        : line,
    );
    writeFileSync(journalPath(), aged.map((line) => `${JSON.stringify(line)}\n`).join(''));

    const second = await start({ maxRecords: 3 });
    expect(second.sim.charges().map((charge) => charge.amount)).toEqual([103, 104, 999]);
    expect(await second.authorize(card.token, 999, key)).toMatchObject({
      status: 201,
      replayed: false,
    });
  });
});

describe('the journal', () => {
  it('ignores a torn last line with a warning, cuts it off and goes on', async () => {
    const first = await start();
    const card = await first.tokenize();
    const id = (await first.authorize(card.token)).body.id as string;
    await first.stop();
    // A crash while a line was written: the start of it, no newline.
    appendFileSync(journalPath(), '{"charge":{"id":"auth_0123","token":"tok_');
    const warnings: string[] = [];
    const log = (level: string, message: string) => warnings.push(`${level}: ${message}`);

    const second = await start({ log });
    expect(warnings).toEqual([
      expect.stringMatching(/^warn: .*journal\.jsonl: ignored its last line \(\d+ bytes\)/),
    ]);
    expect(second.sim.charges().map((charge) => charge.id)).toEqual([id]);
    expect((await second.post(`/v1/authorizations/${id}/capture`, {})).status).toBe(200);
    await second.stop();

    // Cut off, so the lines written after it are whole: a third start reads them all.
    const third = await start({ log });
    expect(warnings).toHaveLength(1);
    expect(third.sim.charges()).toMatchObject([{ id, status: 'captured' }]);
  });

  it('refuses to start on a damaged line before the last, naming it', async () => {
    const first = await start();
    await first.tokenize();
    await first.tokenize();
    await first.stop();
    const lines = readFileSync(journalPath(), 'utf8').split('\n');
    lines[1] = lines[1]!.slice(0, 20);
    writeFileSync(journalPath(), lines.join('\n'));
    expect(() => createProcessorSimulator({ dataDir })).toThrow(
      /journal\.jsonl: line 2 is not JSON/,
    );
    writeFileSync(journalPath(), '{"charge":{"id":"auth_1"}}\n');
    expect(() => createProcessorSimulator({ dataDir })).toThrow(
      /journal\.jsonl: line 1: not a journal entry \(charge\.token, /,
    );
  });

  it('is rewritten with exactly the live records, and stays bounded however many calls', async () => {
    const maxRecords = 10;
    const { sim, post, tokenize } = await start({ maxRecords });
    const tokens: string[] = [];
    const keys: string[] = [];
    let largest = 0;
    let rewrites = 0;
    /** A call with a new key, then the journal's length: shorter than before is a rewrite. */
    const step = async <T>(call: (key: string) => Promise<T>): Promise<T> => {
      keys.push(newKey());
      const result = await call(keys.at(-1)!);
      const lines = readFileSync(journalPath(), 'utf8').split('\n').length - 1;
      if (lines < largest && rewrites++ === 0) {
        // The secret, then the live cards, charges and keys, least recently used first.
        const journal = journalLines();
        expect(journal).toHaveLength(1 + 3 * maxRecords);
        expect(Object.keys(journal[0]!)).toEqual(['secret']);
        expect(journal.slice(1, 11).map((line) => line.card.token)).toEqual(tokens.slice(-10));
        expect(journal.slice(11, 21).map((line) => line.charge)).toEqual(sim.charges());
        expect(journal.slice(21).map((line) => line.key.key)).toEqual(keys.slice(-10));
      }
      largest = Math.max(largest, lines);
      return result;
    };
    for (let i = 0; i < 600; i++) {
      const { token } = await step(async (key) => {
        const card = await tokenize(testCards.success, '123', key);
        tokens.push(card.token);
        return card;
      });
      const { body } = await step((key) =>
        post('/v1/authorizations', { token, amount: 100, currency: 'EUR' }, key),
      );
      await step((key) => post(`/v1/authorizations/${body.id}/capture`, {}, key));
    }
    expect(rewrites).toBeGreaterThanOrEqual(3);
    // The live records (31) and at most 1,000 more.
    expect(largest).toBeLessThanOrEqual(31 + 1_000);
  });

  it('holds no card number, CVC or cardholder data, before and after a rewrite', async () => {
    const { sim, post } = await start();
    const numbers = [...Object.values(testCards), '5555555555554444', '4111111111111111'];
    const cvcs = ['987', '4821', '306'];
    for (const [index, number] of numbers.entries()) {
      const cvc = cvcs[index % cvcs.length]!;
      const body = {
        number,
        expMonth: 11,
        expYear: 2031,
        cvc,
        name: 'Ada Lovelace',
        postalCode: 'EC1A 1BB',
      };
      const token = (await post('/v1/tokens', body)).body.token as string;
      if (number !== testCards.hang)
        await post('/v1/authorizations', { token, amount: 1_234, currency: 'EUR' });
    }
    const expectNoCardData = () => {
      const files = filesUnder(dataDir);
      expect(files.map((file) => file.path)).toEqual([journalPath()]);
      for (const { bytes } of files) {
        for (const number of numbers) expect(bytes.includes(number)).toBe(false);
        const text = bytes.toString('latin1');
        // A CVC standing alone (random hex ids may hold its digits next to others).
        for (const cvc of cvcs)
          expect(text).not.toMatch(new RegExp(`(?<![0-9a-zA-Z])${cvc}(?![0-9a-zA-Z])`));
        // Delimited: a random hex id or secret may contain the letters "ec1a".
        expect(text).not.toMatch(/"cvc"|Lovelace|(?<![0-9a-z])EC1A(?![0-9a-z])/i);
      }
    };
    expectNoCardData();
    sim.reset();
    expectNoCardData();
  });
});

describe('a fingerprint key given by the deployment', () => {
  const fingerprintKey = 'k'.repeat(40);

  it('is never written, and links a card vaulted again after a restart', async () => {
    const first = await start({ fingerprintKey });
    const before = await first.tokenize();
    await first.stop();
    expect(journalLines().filter((line) => 'secret' in line)).toEqual([]);
    const second = await start({ fingerprintKey });
    expect((await second.tokenize()).fingerprint).toBe(before.fingerprint);
    // Another key, other fingerprints: nothing in the folder stands in for the key.
    await second.stop();
    const other = await start({ fingerprintKey: 'x'.repeat(40) });
    expect((await other.tokenize()).fingerprint).not.toBe(before.fingerprint);
  });

  it('is required in production with a data folder (PROCESSOR_FINGERPRINT_KEY)', () => {
    const parse = (env: Record<string, string>) => processorSimulatorEnvSchema.safeParse(env);
    expect(parse({ NODE_ENV: 'production', PROCESSOR_DATA_DIR: dataDir }).error?.issues).toEqual([
      expect.objectContaining({ path: ['PROCESSOR_FINGERPRINT_KEY'] }),
    ]);
    expect(
      parse({
        NODE_ENV: 'production',
        PROCESSOR_DATA_DIR: dataDir,
        PROCESSOR_FINGERPRINT_KEY: fingerprintKey,
      }).success,
    ).toBe(true);
    // Local runs, and a simulator that keeps nothing, make a key of their own.
    expect(parse({ PROCESSOR_DATA_DIR: dataDir }).success).toBe(true);
    expect(parse({ NODE_ENV: 'production' }).success).toBe(true);
    expect(parse({ PROCESSOR_FINGERPRINT_KEY: 'short' }).success).toBe(false);
  });
});

describe('a reset', () => {
  it('empties the journal of charges and keys; the cards stay, as they do in memory', async () => {
    const first = await start();
    const card = await first.tokenize();
    const key = newKey();
    await first.authorize(card.token, 100, key);
    expect((await fetch(`${first.base}/_control/reset`, { method: 'POST' })).status).toBe(204);
    expect(journalLines().map((line) => Object.keys(line))).toEqual([['secret'], ['card']]);
    await first.stop();

    const second = await start();
    expect(second.sim.charges()).toEqual([]);
    expect(await second.authorize(card.token, 100, key)).toMatchObject({
      status: 201,
      replayed: false,
    });
    expect((await second.tokenize()).fingerprint).toBe(card.fingerprint);
  });

  it('that cannot be saved stops every answer until a restart, which finds the state as saved', async () => {
    const first = await start({ log: () => undefined });
    const card = await first.tokenize();
    await first.authorize(card.token);
    // The rewrite's new file cannot be created: a folder has its name.
    mkdirSync(`${journalPath()}.next`);
    expect((await fetch(`${first.base}/_control/reset`, { method: 'POST' })).status).toBe(500);
    for (const path of ['/health', '/v1/charges']) {
      const answer = await first.get(path);
      expect(answer.status, path).toBe(503);
      expect(answer.body.error.code).toBe('state_not_saved');
    }
    await first.stop();
    rmSync(`${journalPath()}.next`, { recursive: true });

    const second = await start();
    expect(second.sim.charges()).toHaveLength(1);
    expect((await second.authorize(card.token)).status).toBe(201);
  });
});
