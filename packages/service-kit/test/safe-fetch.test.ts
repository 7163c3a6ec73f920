import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowlist } from '../src/ip-address.js';
import { createOutboundAgents } from '../src/outbound-agents.js';
import {
  safeFetch,
  safeRequest,
  type SafeFetchFailed,
  type SafeFetchFailure,
  type SafeFetchOptions,
  type SafeRequestOptions,
} from '../src/safe-fetch.js';

const DOCUMENT = Buffer.from(JSON.stringify({ products: [{ sku: 'a-1', price: 1250 }] }));
const MAX_BYTES = 10_000;

let server: http.Server;
let base: string;
let port: number;
const seenHeaders: http.IncomingHttpHeaders[] = [];
const posted: { url: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
let streamClosed: Promise<void>;

function encode(encoding: string, data: Buffer): Buffer {
  if (encoding === 'gzip') return zlib.gzipSync(data);
  if (encoding === 'br') return zlib.brotliCompressSync(data);
  return zlib.deflateSync(data);
}

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  seenHeaders.push(req.headers);
  if (req.method === 'POST') {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      posted.push({ url: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) });
      answerPost(req, res);
    });
    return;
  }
  const url = new URL(req.url ?? '/', 'http://test');
  const hops = /^\/hops\/(\d+)$/.exec(url.pathname);
  const encoded = /^\/encoded\/(gzip|br|deflate)$/.exec(url.pathname);
  if (url.pathname === '/ok' || hops?.[1] === '0') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(DOCUMENT);
  } else if (hops) {
    res.writeHead(302, { location: `${base}/hops/${Number(hops[1]) - 1}` }).end();
  } else if (encoded?.[1]) {
    const body = encode(encoded[1], DOCUMENT);
    res.writeHead(200, { 'content-encoding': encoded[1] }).end(body);
  } else if (url.pathname === '/dir/relative') {
    res.writeHead(301, { location: '../ok' }).end();
  } else if (url.pathname === '/to-metadata') {
    res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
  } else if (url.pathname === '/to-ftp') {
    res.writeHead(308, { location: 'ftp://127.0.0.1/doc.json' }).end();
  } else if (url.pathname === '/to-private') {
    res.writeHead(307, { location: 'http://10.0.0.1/' }).end();
  } else if (url.pathname === '/declared-large') {
    res.writeHead(200, { 'content-length': MAX_BYTES + 1 }).end(Buffer.alloc(MAX_BYTES + 1));
  } else if (url.pathname === '/endless') {
    streamClosed = new Promise((resolve) => res.on('close', () => resolve()));
    res.writeHead(200);
    const timer = setInterval(() => res.write(Buffer.alloc(1024, 'x')), 2);
    res.on('close', () => clearInterval(timer));
  } else if (url.pathname === '/bomb') {
    const bomb = zlib.gzipSync(Buffer.alloc(500 * MAX_BYTES));
    res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': bomb.length }).end(bomb);
  } else if (url.pathname === '/stall') {
    res.writeHead(200, { 'content-length': 100 });
    res.flushHeaders();
  } else if (url.pathname === '/drip') {
    // A byte at a time, slowly: the attack that holds a download slot until the deadline.
    res.writeHead(200);
    const timer = setInterval(() => res.write('x'), 100);
    res.on('close', () => clearInterval(timer));
  } else if (url.pathname === '/trickle') {
    res.writeHead(200);
    let sent = 0;
    const timer = setInterval(() => {
      res.write(Buffer.alloc(1000, 'y'));
      if (++sent === 5) {
        clearInterval(timer);
        res.end();
      }
    }, 20);
  } else {
    res.writeHead(404).end('not here');
  }
}

/** Answers to POSTs, sent once the request body has arrived. */
function answerPost(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://test');
  if (url.pathname === '/accept') {
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"received":true}');
  } else if (url.pathname === '/reject') {
    res.writeHead(422, { 'content-type': 'application/json' }).end('{"errors":[]}');
  } else if (url.pathname === '/moved') {
    res.writeHead(307, { location: `${base}/accept` }).end();
  } else if (url.pathname === '/endless') {
    streamClosed = new Promise((resolve) => res.on('close', () => resolve()));
    res.writeHead(400);
    const timer = setInterval(() => res.write(Buffer.alloc(1024, 'x')), 2);
    res.on('close', () => clearInterval(timer));
  } else if (url.pathname !== '/silent') {
    res.writeHead(404).end();
  }
}

function options(overrides: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return {
    allowHttp: true,
    allowlist: parseAllowlist('127.0.0.1/32'),
    maxBytes: MAX_BYTES,
    maxRedirects: 3,
    urlName: 'callbackUrl',
    connectTimeoutMs: 2_000,
    totalTimeoutMs: 5_000,
    ...overrides,
  };
}

function post(
  overrides: Partial<Extract<SafeRequestOptions, { method: 'POST' }>> = {},
): SafeRequestOptions {
  return {
    method: 'POST',
    allowHttp: true,
    allowlist: parseAllowlist('127.0.0.1/32'),
    maxBytes: MAX_BYTES,
    urlName: 'submissionUrl',
    connectTimeoutMs: 2_000,
    totalTimeoutMs: 5_000,
    ...overrides,
  };
}

function expectFailure(
  result: { ok: boolean } | SafeFetchFailed,
  failure: SafeFetchFailure,
): string {
  expect(result).toMatchObject({ ok: false, failure });
  const message = 'message' in result ? result.message : '';
  // Partner-facing: no internal addresses, no stack traces.
  expect(message).not.toContain('127.0.0.1');
  expect(message).not.toMatch(/\n\s+at |Error:/);
  return message;
}

beforeAll(async () => {
  server = http.createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('safeFetch', () => {
  it('returns the exact bytes and content type', async () => {
    const result = await safeFetch(`${base}/ok`, options());
    expect(result).toEqual({
      ok: true,
      body: DOCUMENT,
      finalUrl: `${base}/ok`,
      contentType: 'application/json',
    });
  });

  it.each(['/ok', '/encoded/gzip', '/trickle'])(
    'returns a body %s that alone spans its ArrayBuffer (transferable to a thread)',
    async (path) => {
      const result = await safeFetch(`${base}${path}`, options());
      expect(result.ok).toBe(true);
      const body = result.ok ? result.body : Buffer.alloc(1);
      expect(body.byteOffset).toBe(0);
      expect(body.buffer.byteLength).toBe(body.length);
    },
  );

  it('asks for JSON and for compressed encodings', async () => {
    seenHeaders.length = 0;
    await safeFetch(`${base}/ok`, options());
    expect(seenHeaders[0]).toMatchObject({
      accept: 'application/json',
      'accept-encoding': 'gzip, br',
    });
  });

  it.each(['gzip', 'br', 'deflate'])('decodes a %s body', async (encoding) => {
    const result = await safeFetch(`${base}/encoded/${encoding}`, options());
    expect(result.ok && result.body).toEqual(DOCUMENT);
  });

  it('requires https unless http is allowed', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/ok`, options({ allowHttp: false })),
      'scheme_not_allowed',
    );
    expect(message).toBe('callbackUrl must use https');
  });

  it.each(['ftp://127.0.0.1/doc.json', 'file:///etc/passwd', 'gopher://127.0.0.1/'])(
    'refuses the scheme of %s',
    async (url) => {
      expectFailure(await safeFetch(url, options()), 'scheme_not_allowed');
    },
  );

  it('refuses credentials in the URL', async () => {
    const message = expectFailure(
      await safeFetch(`http://user:pass@127.0.0.1:${port}/ok`, options()),
      'invalid_url',
    );
    expect(message).not.toContain('pass');
  });

  it('refuses an unparseable URL', async () => {
    expectFailure(await safeFetch('not a url', options()), 'invalid_url');
  });

  it('refuses a loopback literal when the allow-list is empty', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/ok`, options({ allowlist: parseAllowlist('') })),
      'address_not_allowed',
    );
    expect(message).toBe('callbackUrl does not resolve to a publicly routable address');
  });

  it('refuses a hostname that resolves to loopback (checked in the lookup)', async () => {
    seenHeaders.length = 0;
    const result = await safeFetch(
      `http://localhost:${port}/ok`,
      options({ allowlist: parseAllowlist('') }),
    );
    expectFailure(result, 'address_not_allowed');
    expect(seenHeaders).toHaveLength(0);
  });

  it('refuses a loopback hostname when net asks for a single address', async () => {
    const autoSelect = net.getDefaultAutoSelectFamily();
    net.setDefaultAutoSelectFamily(false);
    try {
      const refused = await safeFetch(
        `http://localhost:${port}/ok`,
        options({ allowlist: parseAllowlist('') }),
      );
      expectFailure(refused, 'address_not_allowed');
      const admitted = await safeFetch(`http://localhost:${port}/ok`, options());
      expect(admitted.ok && admitted.body).toEqual(DOCUMENT);
    } finally {
      net.setDefaultAutoSelectFamily(autoSelect);
    }
  });

  it('checks the addresses a name resolves to: only an allow-listed range admits them', async () => {
    seenHeaders.length = 0;
    const elsewhere = await safeFetch(
      `http://localhost:${port}/ok`,
      options({ allowlist: parseAllowlist('10.0.0.0/8,169.254.0.0/16') }),
    );
    expectFailure(elsewhere, 'address_not_allowed');
    expect(seenHeaders).toHaveLength(0);
    const loopback = await safeFetch(
      `http://LOCALHOST:${port}/ok`,
      options({ allowlist: parseAllowlist('127.0.0.0/8,::1/128') }),
    );
    expect(loopback.ok && loopback.body).toEqual(DOCUMENT);
  });

  it('follows a chain of two redirects', async () => {
    const result = await safeFetch(`${base}/hops/2`, options());
    expect(result).toMatchObject({ ok: true, finalUrl: `${base}/hops/0` });
    expect(result.ok && result.body).toEqual(DOCUMENT);
  });

  it('resolves a relative Location against the current URL', async () => {
    const result = await safeFetch(`${base}/dir/relative`, options());
    expect(result).toMatchObject({ ok: true, finalUrl: `${base}/ok` });
  });

  it('refuses more redirects than allowed', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/hops/4`, options()),
      'too_many_redirects',
    );
    expect(message).toBe('too many redirects (more than 3)');
  });

  it('refuses a redirect to the cloud metadata address', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/to-metadata`, options()),
      'address_not_allowed',
    );
    expect(message).not.toContain('169.254');
  });

  it('refuses a redirect to a private address', async () => {
    expectFailure(await safeFetch(`${base}/to-private`, options()), 'address_not_allowed');
  });

  it('re-checks the scheme of a redirect target', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/to-ftp`, options()),
      'scheme_not_allowed',
    );
    expect(message).toBe('callbackUrl redirect target must use http or https');
  });

  it('reports a non-2xx status with its code', async () => {
    const message = expectFailure(await safeFetch(`${base}/missing`, options()), 'http_status');
    expect(message).toContain('HTTP 404');
  });

  it('refuses a declared Content-Length over the limit', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/declared-large`, options()),
      'too_large',
    );
    expect(message).toBe('the document is larger than 9.8 KB');
  });

  it('stops reading an undeclared body as soon as it passes the limit', async () => {
    expectFailure(await safeFetch(`${base}/endless`, options()), 'too_large');
    // The server's response closes because the client hung up, not because it finished.
    await expect(streamClosed).resolves.toBeUndefined();
  });

  it('applies the limit to decompressed bytes', async () => {
    expectFailure(await safeFetch(`${base}/bomb`, options()), 'too_large');
  });

  it('gives up at the total deadline when the server stalls after the headers', async () => {
    const message = expectFailure(
      await safeFetch(`${base}/stall`, options({ totalTimeoutMs: 300 })),
      'timeout',
    );
    expect(message).toBe('the download from callbackUrl did not finish within 0.3 seconds');
  });

  it('fails a body dripped below the minimum rate once the grace has passed, long before the deadline', async () => {
    const message = expectFailure(
      await safeFetch(
        `${base}/drip`,
        options({ totalTimeoutMs: 30_000, minRate: { bytesPerSec: 1024, graceMs: 300 } }),
      ),
      'too_slow',
    );
    expect(message).toBe('the download from callbackUrl was slower than 1 KB per second');
  });

  it('fails a server that stalls after the headers as too slow once the grace has passed', async () => {
    expectFailure(
      await safeFetch(
        `${base}/stall`,
        options({ totalTimeoutMs: 30_000, minRate: { bytesPerSec: 1, graceMs: 300 } }),
      ),
      'too_slow',
    );
  });

  it('lets a download at or above the minimum rate finish', async () => {
    const result = await safeFetch(
      `${base}/trickle`,
      options({ minRate: { bytesPerSec: 1_000, graceMs: 50 } }),
    );
    expect(result).toMatchObject({ ok: true });
    expect(result.ok && result.body.length).toBe(5_000);
  });

  it('reports a refused connection as unreachable', async () => {
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const message = expectFailure(
      await safeFetch(`http://127.0.0.1:${freePort}/`, options()),
      'unreachable',
    );
    expect(message).toBe('callbackUrl could not be reached');
  });

  it('reports a failed TLS handshake as unreachable', async () => {
    const message = expectFailure(
      await safeFetch(`https://127.0.0.1:${port}/ok`, options()),
      'unreachable',
    );
    expect(message).toBe('callbackUrl failed the TLS handshake');
  });

  it('reports an unresolvable host in the same words as a private one (no DNS oracle)', async () => {
    const unresolvable = expectFailure(
      await safeFetch('http://does-not-exist.invalid/doc.json', options()),
      'dns_failed',
    );
    const loopback = expectFailure(
      await safeFetch(`http://localhost:${port}/ok`, options({ allowlist: parseAllowlist('') })),
      'address_not_allowed',
    );
    const literal = expectFailure(
      await safeFetch('http://10.0.0.1/doc.json', options()),
      'address_not_allowed',
    );
    expect(unresolvable).toBe('callbackUrl does not resolve to a publicly routable address');
    expect(loopback).toBe(unresolvable);
    expect(literal).toBe(unresolvable);
  });

  it('stops when the caller aborts', async () => {
    const controller = new AbortController();
    server.once('request', () => controller.abort());
    const result = await safeFetch(`${base}/stall`, options({ signal: controller.signal }));
    expectFailure(result, 'aborted');
  });

  it('does not start when the signal is already aborted', async () => {
    seenHeaders.length = 0;
    const result = await safeFetch(`${base}/ok`, options({ signal: AbortSignal.abort() }));
    expectFailure(result, 'aborted');
    expect(seenHeaders).toHaveLength(0);
  });

  it('reports progress with increasing byte counts', async () => {
    const progress: number[] = [];
    const result = await safeFetch(
      `${base}/trickle`,
      options({ onProgress: (bytes) => progress.push(bytes) }),
    );
    expect(result.ok && result.body.length).toBe(5000);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(new Set(progress).size).toBe(progress.length);
    expect(progress.at(-1)).toBe(5000);
  });
});

describe('safeFetch messages', () => {
  it('name the URL "url" unless told its name', async () => {
    const { urlName: _, ...unnamed } = options({ allowHttp: false });
    const message = expectFailure(await safeFetch(`${base}/ok`, unnamed), 'scheme_not_allowed');
    expect(message).toBe('url must use https');
  });
});

describe('safeRequest', () => {
  it('POSTs the body and headers, and returns the answer', async () => {
    posted.length = 0;
    const body = Buffer.from(JSON.stringify({ orderId: 'o-1' }));
    const result = await safeRequest(
      `${base}/accept?attempt=1`,
      post({ body, headers: { 'content-type': 'application/json', 'x-signature': 'v1,abc' } }),
    );
    expect(result).toMatchObject({
      ok: true,
      status: 202,
      truncated: false,
      finalUrl: `${base}/accept?attempt=1`,
    });
    expect(result.ok && result.headers['content-type']).toBe('application/json');
    expect(result.ok && result.body.toString()).toBe('{"received":true}');
    expect(posted).toHaveLength(1);
    expect(posted[0]!.url).toBe('/accept?attempt=1');
    expect(posted[0]!.body).toEqual(body);
    expect(posted[0]!.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(body.length),
      'x-signature': 'v1,abc',
    });
  });

  it('returns a 4xx with its body instead of failing', async () => {
    const result = await safeRequest(`${base}/reject`, post({ body: Buffer.from('{}') }));
    expect(result).toMatchObject({ ok: true, status: 422, truncated: false });
    expect(result.ok && result.body.toString()).toBe('{"errors":[]}');
  });

  it('returns a redirect to a POST as the answer, without following it', async () => {
    posted.length = 0;
    const result = await safeRequest(`${base}/moved`, post({ body: Buffer.from('{}') }));
    expect(result).toMatchObject({ ok: true, status: 307, finalUrl: `${base}/moved` });
    expect(result.ok && result.headers.location).toBe(`${base}/accept`);
    expect(posted.map((request) => request.url)).toEqual(['/moved']);
  });

  it('stops reading a body over the limit and returns its first bytes', async () => {
    const result = await safeRequest(`${base}/endless`, post());
    expect(result).toMatchObject({ ok: true, status: 400, truncated: true });
    expect(result.ok && result.body.length).toBe(MAX_BYTES);
    await expect(streamClosed).resolves.toBeUndefined();
  });

  // Thunks: the server's port is known only once it listens.
  it.each([
    ['a private literal', () => 'http://10.0.0.1/orders', parseAllowlist('127.0.0.1/32')],
    ['loopback without an allow-list entry', () => `${base}/accept`, parseAllowlist('')],
    [
      'a hostname resolving to loopback',
      () => `http://localhost:${port}/accept`,
      parseAllowlist(''),
    ],
  ])('refuses %s without sending anything', async (_, url, allowlist) => {
    posted.length = 0;
    const message = expectFailure(
      await safeRequest(url(), post({ allowlist, body: Buffer.from('{}') })),
      'address_not_allowed',
    );
    expect(message).toBe('submissionUrl does not resolve to a publicly routable address');
    expect(posted).toHaveLength(0);
  });

  it('gives up at the deadline when the server never answers', async () => {
    const started = Date.now();
    const message = expectFailure(
      await safeRequest(`${base}/silent`, post({ body: Buffer.from('{}'), totalTimeoutMs: 300 })),
      'timeout',
    );
    expect(message).toBe('submissionUrl did not answer within 0.3 seconds');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('follows redirects of a GET and returns a final 404 with its body', async () => {
    const followed = await safeRequest(`${base}/hops/2`, { ...options(), method: 'GET' });
    expect(followed).toMatchObject({ ok: true, status: 200, finalUrl: `${base}/hops/0` });
    const missing = await safeRequest(`${base}/missing`, { ...options(), method: 'GET' });
    expect(missing).toMatchObject({ ok: true, status: 404 });
    expect(missing.ok && missing.body.toString()).toBe('not here');
  });
});

describe('safeRequest on keep-alive agents', () => {
  let pooled: http.Server;
  let pooledPort: number;
  let connections = 0;
  const allowlist = parseAllowlist('127.0.0.1/32');
  const agentsWith = (overrides: Partial<Parameters<typeof createOutboundAgents>[0]> = {}) =>
    createOutboundAgents({
      allowlist,
      maxSocketsPerOrigin: 4,
      maxIdleSockets: 4,
      maxSocketAgeMs: 60_000,
      idleTimeoutMs: 4_000,
      ...overrides,
    });
  const send = (agents: ReturnType<typeof createOutboundAgents>, path = '/') =>
    safeRequest(`http://127.0.0.1:${pooledPort}${path}`, post({ allowlist, agents }));

  beforeAll(async () => {
    pooled = http.createServer((req, res) => {
      const delay = Number(new URL(req.url ?? '/', 'http://test').searchParams.get('delay') ?? 0);
      req.resume();
      req.on('end', () => setTimeout(() => res.writeHead(204).end(), delay));
    });
    pooled.on('connection', () => connections++);
    pooled.listen(0, '127.0.0.1');
    await once(pooled, 'listening');
    pooledPort = (pooled.address() as AddressInfo).port;
  });

  afterAll(async () => {
    pooled.closeAllConnections();
    await new Promise((resolve) => pooled.close(resolve));
  });

  it('sends two requests to one endpoint over one connection', async () => {
    const agents = agentsWith();
    connections = 0;
    try {
      expect(await send(agents)).toMatchObject({ ok: true, status: 204 });
      expect(await send(agents)).toMatchObject({ ok: true, status: 204 });
      expect(connections).toBe(1);
    } finally {
      agents.close();
    }
  });

  it('does not reuse a connection older than the cap', async () => {
    const agents = agentsWith({ maxSocketAgeMs: 100 });
    connections = 0;
    try {
      expect(await send(agents)).toMatchObject({ ok: true, status: 204 });
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(await send(agents)).toMatchObject({ ok: true, status: 204 });
      expect(connections).toBe(2);
    } finally {
      agents.close();
    }
  });

  it('keeps no idle connection past the overall cap', async () => {
    const agents = agentsWith({ maxIdleSockets: 0 });
    connections = 0;
    try {
      await send(agents);
      await send(agents);
      expect(connections).toBe(2);
    } finally {
      agents.close();
    }
  });

  it('does not time out the connect on a reused connection whose answer takes longer', async () => {
    const agents = agentsWith();
    connections = 0;
    try {
      await send(agents);
      const slow = await safeRequest(
        `http://127.0.0.1:${pooledPort}/?delay=300`,
        post({ allowlist, agents, connectTimeoutMs: 100 }),
      );
      expect(slow).toMatchObject({ ok: true, status: 204 });
      expect(connections).toBe(1);
    } finally {
      agents.close();
    }
  });

  it('still checks the address of every connection it makes', async () => {
    const closed = parseAllowlist('');
    const agents = createOutboundAgents({
      allowlist: closed,
      maxSocketsPerOrigin: 4,
      maxIdleSockets: 4,
      maxSocketAgeMs: 60_000,
      idleTimeoutMs: 4_000,
    });
    connections = 0;
    try {
      const byName = await safeRequest(
        `http://localhost:${pooledPort}/`,
        post({ allowlist: closed, agents }),
      );
      expectFailure(byName, 'address_not_allowed');
      const literal = await safeRequest(
        `http://127.0.0.1:${pooledPort}/`,
        post({ allowlist: closed, agents }),
      );
      expectFailure(literal, 'address_not_allowed');
      expect(connections).toBe(0);
      // Connections checked against another list are never lent out.
      await expect(
        safeRequest(`http://127.0.0.1:${pooledPort}/`, post({ allowlist, agents })),
      ).rejects.toThrow(/another allow-list/);
    } finally {
      agents.close();
    }
  });
});
