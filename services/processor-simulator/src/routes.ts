import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { ApiError, invalidRequest } from './api-error.js';
import {
  faultChangeSchema,
  faultsFor,
  pause,
  roll,
  type Faults,
  type Operation,
} from './faults.js';
import type { IdempotencyStore, StoredResult } from './idempotency.js';
import type { Answer, Execution, Ledger } from './ledger.js';
import type { SavedState } from './saved-state.js';
import {
  authorizationBody,
  authorizationsQuery,
  captureBody,
  chargesQuery,
  refundBody,
  tokenBody,
  voidBody,
} from './schemas.js';

export interface AppDeps {
  readonly apiKey: string;
  readonly ledger: Ledger;
  readonly idempotency: IdempotencyStore;
  readonly saved: SavedState;
  readonly faults: () => Faults;
  readonly setFaults: (change: Partial<Faults>) => Faults;
  readonly reset: () => void;
  /** Aborted when the simulator closes: every wait and hang ends. */
  readonly closing: AbortSignal;
}

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const JSON_TYPE = 'application/json; charset=utf-8';

// Fixed answers; an ApiError carries no request data, so one instance serves every request.
const badApiKey = new ApiError(401, 'authentication_error', 'invalid_api_key', 'Bad API key');
const noKey = invalidRequest(400, 'idempotency_key_required', 'Send an Idempotency-Key');
const keyInUse = new ApiError(409, 'idempotency_error', 'idempotency_key_in_use', 'Key in use');
const keyReused = new ApiError(422, 'idempotency_error', 'idempotency_key_reused', 'Key reused');
const injected = new ApiError(500, 'api_error', 'internal_error', 'Internal error');
const notSaving = new ApiError(503, 'api_error', 'state_not_saved', 'Cannot save its state');

/** Parse with zod; the message names fields only, never values (card numbers, cvc). */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const fields = [...new Set(result.error.issues.map((issue) => issue.path.join('.') || 'body'))];
  throw invalidRequest(400, 'parameter_invalid', `Invalid parameters: ${fields.join(', ')}`);
}

function send(reply: FastifyReply, result: StoredResult): FastifyReply {
  return reply.code(result.status).type(JSON_TYPE).send(result.body);
}

const sendError = (reply: FastifyReply, error: ApiError) =>
  send(reply, { status: error.status, body: JSON.stringify(error.body()) });

/** End a request without an answer (a hang, a gone client, a closing simulator). */
function abandon(reply: FastifyReply): FastifyReply {
  reply.hijack();
  reply.raw.destroy();
  return reply;
}

/** Aborts when the client goes away before its answer was written. */
function clientGone(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  if (reply.raw.socket?.destroyed !== false) gone.abort();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone.signal;
}

/** Run a call; a refusal it throws (ApiError) is its answer, anything else a bug. */
function settle<E extends Execution>(execute: () => E): E | Answer {
  try {
    return execute();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, body: error.body() };
  }
}

const nothingToRelease = () => undefined;

function fastifyErrorToApi(error: FastifyError): ApiError {
  if (error instanceof ApiError) return error;
  const status = error.statusCode ?? 500;
  if (status === 413) return invalidRequest(413, 'body_too_large', 'The body is over 64 KiB');
  if (status === 415) return invalidRequest(415, 'unsupported_media_type', 'Send JSON');
  if (status === 400 && (error instanceof SyntaxError || error.code?.includes('JSON'))) {
    return invalidRequest(400, 'invalid_json', 'The body is not valid JSON');
  }
  if (status >= 400 && status < 500) {
    return invalidRequest(status, 'invalid_request', 'The request is invalid');
  }
  return injected;
}

/** The simulator's HTTP app: `/v1` processor API, `/health`, `/_control` fault control. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: 64 * 1024,
    // Hanging requests hold their sockets; closing must not wait for them.
    forceCloseConnections: true,
  });

  // Our own errors and Fastify's (parse, limits) share one shape; internals never leak.
  app.setErrorHandler((error: FastifyError, _request, reply) =>
    sendError(reply, fastifyErrorToApi(error)),
  );
  app.setNotFoundHandler((_request, reply) =>
    sendError(reply, invalidRequest(404, 'resource_missing', 'No such route')),
  );
  // Once a write to the journal failed, memory may hold what the disk does not: answer nothing,
  // /health included, until a restart loads what the disk holds.
  app.addHook('onRequest', async (_request, reply) => {
    if (deps.saved.failure) return sendError(reply, notSaving);
  });

  // It says it is a test processor (Stripe marks test objects `livemode: false`): payments in
  // production sends a sandbox processor no test-mode call until it has said so.
  app.get('/health', () => ({ status: 'ok', livemode: false }));
  app.get('/_control/faults', () => deps.faults());
  app.put('/_control/faults', (request) => deps.setFaults(parse(faultChangeSchema, request.body)));
  app.post('/_control/reset', (_request, reply) => {
    deps.reset();
    return reply.code(204).send();
  });

  /** A call that never answers: it holds on until its client leaves or the simulator closes. */
  async function hang(reply: FastifyReply, gone: AbortSignal, release: () => void): Promise<void> {
    await pause(Infinity, deps.closing, gone);
    release(); // so a retry after the disconnect executes
    abandon(reply);
  }

  /**
   * The faults before a call executes: its latency, then an injected error or hang. True when
   * a fault ended the call, false when it goes on to execute. (A boolean, not the reply: a
   * reply is thenable, so an async function cannot resolve to it.)
   */
  async function faultEnded(
    reply: FastifyReply,
    faults: Faults,
    gone: AbortSignal,
    release: () => void,
  ): Promise<boolean> {
    // The processor does not notice a client leaving during latency: the call still executes.
    if (!(await pause(faults.latencyMs, deps.closing))) {
      release();
      abandon(reply);
      return true;
    }
    if (roll(faults.errorRate)) {
      release();
      sendError(reply, injected);
      return true;
    }
    if (roll(faults.hangRate)) {
      await hang(reply, gone, release);
      return true;
    }
    return false;
  }

  /** Write an executed call's answer, late when `slowRate` strikes (or never: client gone). */
  async function answer(
    reply: FastifyReply,
    faults: Faults,
    gone: AbortSignal,
    result: StoredResult,
  ): Promise<FastifyReply> {
    if (roll(faults.slowRate) && !(await pause(faults.slowMs, deps.closing, gone))) {
      return abandon(reply);
    }
    if (gone.aborted) return abandon(reply);
    return send(reply, result);
  }

  /**
   * Run one POST the way a processor does: claim the key, wait the latency, roll the
   * faults (those aimed at `operation`), then execute once and keep the answer for replays.
   */
  async function idempotently(
    operation: Operation,
    request: FastifyRequest,
    reply: FastifyReply,
    input: unknown,
    execute: () => Execution,
  ): Promise<FastifyReply> {
    const key = request.headers['idempotency-key'] as string; // checked in onRequest
    const path = request.url.split('?')[0] ?? '';
    const bodyHash = createHash('sha256').update(JSON.stringify(input)).digest('hex');
    const claim = deps.idempotency.claim(key, `${request.method} ${path} ${bodyHash}`);
    const release = () => {
      if (claim.kind === 'owner') claim.release();
    };
    const gone = clientGone(reply);
    const faults = faultsFor(deps.faults(), operation);

    if (await faultEnded(reply, faults, gone, release)) return reply;

    switch (claim.kind) {
      case 'replay':
        return send(reply.header('idempotent-replayed', 'true'), claim.result);
      case 'in_use':
        return sendError(reply, keyInUse);
      case 'reused':
        return sendError(reply, keyReused);
      case 'owner':
        break;
    }

    let execution: Execution;
    try {
      execution = settle(execute);
    } catch (error) {
      release();
      throw error;
    }
    if (execution === 'hang') {
      await hang(reply, gone, release);
      return reply;
    }
    const result = { status: execution.status, body: JSON.stringify(execution.body) };
    const saved = claim.complete(result);
    // Executed, stored and saved (its change and answer on one line) first: a retry during a
    // slow answer, or after a restart, is replayed, never charged twice.
    deps.saved.save({ ...execution.change, ...(saved ? { key: saved } : {}) });
    return answer(reply, faults, gone, result);
  }

  /** Run one lookup: it changes nothing, so no key, but the faults aimed at `retrieve` apply. */
  async function lookup(reply: FastifyReply, execute: () => Answer): Promise<FastifyReply> {
    const gone = clientGone(reply);
    const faults = faultsFor(deps.faults(), 'retrieve');
    if (await faultEnded(reply, faults, gone, nothingToRelease)) return reply;
    const found = settle(execute);
    return answer(reply, faults, gone, { status: found.status, body: JSON.stringify(found.body) });
  }

  void app.register(
    (v1, _options, done) => {
      v1.addHook('onRequest', async (request, reply) => {
        if (request.headers.authorization !== `Bearer ${deps.apiKey}`) {
          return sendError(reply, badApiKey);
        }
        const key = request.headers['idempotency-key'];
        if (request.method === 'POST' && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
          return sendError(reply, noKey);
        }
      });

      v1.post('/tokens', (request, reply) => {
        const input = parse(tokenBody, request.body);
        return idempotently('tokenize', request, reply, input, () => deps.ledger.tokenize(input));
      });
      v1.post('/authorizations', (request, reply) => {
        const input = parse(authorizationBody, request.body);
        const key = request.headers['idempotency-key'] as string;
        return idempotently('authorize', request, reply, input, () =>
          deps.ledger.authorize(input, key),
        );
      });
      v1.post<{ Params: { id: string } }>('/authorizations/:id/capture', (request, reply) => {
        const input = parse(captureBody, request.body);
        return idempotently('capture', request, reply, input, () =>
          deps.ledger.capture(request.params.id, input.amount),
        );
      });
      v1.post<{ Params: { id: string } }>('/authorizations/:id/void', (request, reply) => {
        const input = parse(voidBody, request.body);
        return idempotently('void', request, reply, input, () =>
          deps.ledger.void(request.params.id),
        );
      });
      v1.post('/refunds', (request, reply) => {
        const input = parse(refundBody, request.body);
        return idempotently('refund', request, reply, input, () => deps.ledger.refund(input));
      });
      v1.get<{ Params: { id: string } }>('/authorizations/:id', (request, reply) =>
        lookup(reply, () => deps.ledger.retrieve(request.params.id)),
      );
      v1.get('/authorizations', (request, reply) => {
        const query = parse(authorizationsQuery, request.query);
        return lookup(reply, () => deps.ledger.find(query.reference));
      });
      // A test listing, not a processor API: no faults, so tests can always count charges.
      v1.get('/charges', (request) => {
        const query = parse(chargesQuery, request.query);
        return { charges: deps.ledger.list(query.status) };
      });
      done();
    },
    { prefix: '/v1' },
  );

  return app;
}
