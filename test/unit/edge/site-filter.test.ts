import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { siteFilteredAnswer } from '../../../src/edge/site-filter.js';

const slice = (zones: string[]) => ({
  kind: 'EndpointSlice',
  metadata: { name: 'menu-x', labels: { 'edgeadm.io/site-grid': 'menu' } },
  endpoints: zones.map((zone, i) => ({ addresses: [`10.42.0.${i}`], zone })),
});

let server: Server | undefined;
afterEach(() => server?.close());

/** A server that answers through the filter for site lyon, as the router does; `answer` writes as a proxy part would. */
async function get(
  path: string,
  answer: (res: ServerResponse) => void,
): Promise<{ body: string; headers: Record<string, unknown> }> {
  server = createServer((req, res) => answer(siteFilteredAnswer(req, res, path.split('?')[0]!, 'lyon')));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    request({ port, path, headers: { accept: 'application/vnd.kubernetes.protobuf' } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ body, headers: res.headers }));
    })
      .on('error', reject)
      .end();
  });
}

describe('the site filter on the edge-proxy answers', () => {
  it('filters a list answer written in pieces with a Content-Length for the unfiltered body', async () => {
    const list = JSON.stringify({ kind: 'EndpointSliceList', items: [slice(['lyon', 'nice', 'lyon'])] });
    const { body, headers } = await get('/apis/discovery.k8s.io/v1/endpointslices', (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(list.length) });
      res.write(list.slice(0, 40));
      res.end(list.slice(40));
    });
    expect(headers['content-length']).toBeUndefined();
    expect(JSON.parse(body).items[0].endpoints.map((e: { zone: string }) => e.zone)).toEqual(['lyon', 'lyon']);
  });

  it('filters a watch line by line, also a line split across writes', async () => {
    const added = JSON.stringify({ type: 'ADDED', object: slice(['nice', 'lyon']) });
    const modified = JSON.stringify({ type: 'MODIFIED', object: slice(['nice']) });
    const { body } = await get('/apis/discovery.k8s.io/v1/endpointslices?watch=1', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`${added}\n${modified.slice(0, 10)}`);
      res.end(`${modified.slice(10)}\n`);
    });
    const events = body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events.map((e) => e.object.endpoints.map((x: { zone: string }) => x.zone))).toEqual([['lyon'], []]);
  });

  it('leaves every other path alone', async () => {
    const text = JSON.stringify(slice(['nice']));
    const { body, headers } = await get('/api/v1/endpoints', (res) => {
      res.writeHead(200, { 'content-length': String(text.length) });
      res.end(text);
    });
    expect(body).toBe(text);
    expect(headers['content-length']).toBe(String(text.length));
  });
});
