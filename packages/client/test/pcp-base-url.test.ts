import { afterEach, describe, expect, it } from 'vitest';
import { unsafeBaseUrl } from '../src/cli/base-url.js';
import { listenCommand } from '../src/cli/listen-command.js';
import { triggerCommand } from '../src/cli/trigger-command.js';
import { problem, startScriptedServer, type ScriptedServer } from './scripted-server.js';

/**
 * The `pcp` commands that send the API key refuse plain http to anything but this machine,
 * before sending anything. The platform stand-in listens on 127.0.0.1; `0.0.0.0` reaches it
 * too (Linux), but is not a name the commands trust: had they sent anything, it would show.
 */

const KEY = 'pcp_test_key_secret';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function collect() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: {
      stdout: (text: string) => void (out.stdout += text),
      stderr: (text: string) => void (out.stderr += text),
    },
  };
}

async function platformRefusingTheKey() {
  server = await startScriptedServer([{ status: 401, body: problem(401, 'UNAUTHORIZED') }]);
  return { local: server.baseUrl, remote: server.baseUrl.replace('127.0.0.1', '0.0.0.0') };
}

const listen = (baseUrl: string | undefined, env: Record<string, string> = {}) => {
  const { out, io } = collect();
  const args = ['--forward-to', 'http://localhost:3000/webhooks', '--api-key', KEY];
  const run = listenCommand(
    baseUrl === undefined ? args : [...args, '--base-url', baseUrl],
    io,
    env,
    new AbortController().signal,
  );
  return run.then((code) => ({ code, ...out }));
};

const trigger = (baseUrl: string) => {
  const { out, io } = collect();
  return triggerCommand(['order.created', '--api-key', KEY, '--base-url', baseUrl], io, {}).then(
    (code) => ({ code, ...out }),
  );
};

describe('pcp listen and pcp trigger over plain http', () => {
  it('pcp listen refuses another host before sending the key, and sends it to this machine', async () => {
    const { local, remote } = await platformRefusingTheKey();
    const refused = await listen(remote);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'Refusing to send your API key over plain http to 0.0.0.0: use an https base URL',
    );
    expect(server!.requests).toEqual([]);
    // The same from PCP_BASE_URL.
    expect((await listen(undefined, { PCP_BASE_URL: remote })).code).toBe(2);
    expect(server!.requests).toEqual([]);

    const sent = await listen(local);
    expect(sent.code).toBe(1);
    expect(server!.requests).toHaveLength(1);
    expect(server!.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('pcp trigger refuses another host before sending the key, and sends it to this machine', async () => {
    const { local, remote } = await platformRefusingTheKey();
    const refused = await trigger(remote);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('Refusing to send your API key over plain http to 0.0.0.0');
    expect(server!.requests).toEqual([]);

    const sent = await trigger(local);
    expect(sent.code).toBe(1);
    expect(server!.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('trusts https anywhere and plain http to localhost, 127.0.0.1 and ::1 only', () => {
    for (const fine of [
      'https://api.example',
      'https://10.0.0.5:8443',
      'http://localhost:8080',
      'http://127.0.0.1:8080',
      'http://[::1]:8080',
    ]) {
      expect(unsafeBaseUrl(fine), fine).toBeUndefined();
    }
    for (const unsafe of [
      'http://api.example',
      'http://10.0.0.5:8080',
      'http://localhost.example.com',
      'http://127.0.0.1.nip.io',
      'http://[::2]',
    ]) {
      expect(unsafeBaseUrl(unsafe), unsafe).toMatch(/^Refusing to send your API key/);
    }
    expect(unsafeBaseUrl('ftp://api.example')).toMatch(/neither https nor http/);
  });
});
