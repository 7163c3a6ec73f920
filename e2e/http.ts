/** Small fetch helpers for end-to-end tests against the gateway. */
export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (undefined when the body is empty). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    apiKey?: string;
    body?: unknown;
    rawBody?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  let payload: string | undefined;
  if (options.rawBody !== undefined) payload = options.rawBody;
  else if (options.body !== undefined) payload = JSON.stringify(options.body);
  if (payload !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}
