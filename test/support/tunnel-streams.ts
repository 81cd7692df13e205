/**
 * The hub's side of the agent's tunnel streams in tests: one request on an
 * HTTP/2 session to the agent side, read whole.
 */
import type { ClientHttp2Session } from 'node:http2';

/** A stream's answer: its status and its body as text. */
export interface StreamAnswer {
  status: number;
  body: string;
}

/** Sends one stream (with a body, or ended at once) and resolves with its answer once it ends. */
export function sendStream(
  client: ClientHttp2Session,
  headers: Record<string, string | string[]>,
  body?: string | Buffer,
): Promise<StreamAnswer> {
  return new Promise((resolve, reject) => {
    const stream = client.request(headers, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let status = 0;
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }));
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}

/** The values of one header, as separate lines, from raw header pairs (names compared lower-case). */
export function headerLines(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === name) values.push(rawHeaders[i + 1] as string);
  }
  return values;
}
