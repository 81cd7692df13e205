import { describe, expect, it } from 'vitest';
import { metricsPortAnswer } from '../../../src/edge/listeners.js';

describe('metricsPortAnswer', () => {
  it('serves /healthz and /metrics (whatever the query) and nothing else', async () => {
    const metrics = async () => 'edgeadm_edge_proxy_online 1\n';
    expect(await metricsPortAnswer('/healthz', metrics)).toEqual({
      status: 200,
      contentType: 'text/plain',
      body: 'ok\n',
    });
    expect(await metricsPortAnswer('/metrics?x=1', metrics)).toEqual({
      status: 200,
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      body: 'edgeadm_edge_proxy_online 1\n',
    });
    expect((await metricsPortAnswer('/healthz?verbose', metrics)).status).toBe(200);
    expect((await metricsPortAnswer('/api/v1/pods', metrics)).status).toBe(404);
    expect((await metricsPortAnswer(undefined, metrics)).status).toBe(404);
  });
});
