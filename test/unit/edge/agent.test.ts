import type * as V8 from 'node:v8';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const v8Flags = vi.hoisted(() => [] as string[]);
vi.mock('node:v8', async (importOriginal) => {
  const original = await importOriginal<typeof V8>();
  return { ...original, setFlagsFromString: (flag: string) => void v8Flags.push(flag) };
});

const { AGENT_V8_FLAGS, runEdgeProxyAgent } = await import('../../../src/edge/agent.js');

const io = { logger: { info() {}, warn() {}, error() {}, debug() {} } as never, announce() {} };
const flags = {
  kubeconfig: '/nonexistent/kubeconfig',
  listen: '127.0.0.1:0',
  'metrics-listen': 'none',
  'cache-dir': '/nonexistent/cache',
  'cache-max-bytes': '1Mi',
  'cache-max-entries': 10,
  'client-cert-map': [],
  'health-interval': '5s',
};

describe('runEdgeProxyAgent', () => {
  beforeEach(() => void v8Flags.splice(0));

  it('gives its process the V8 memory settings before anything else, even when it then fails to start', async () => {
    await expect(runEdgeProxyAgent(flags, io)).rejects.toThrow();
    expect(v8Flags).toEqual([...AGENT_V8_FLAGS]);
    expect(AGENT_V8_FLAGS).toContain('--optimize-for-size');
  });
});
