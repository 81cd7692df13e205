/**
 * The lean start path of `agent edge-proxy` must take exactly the flags the
 * oclif command documents, parse them to the same values, and hand every
 * invocation it cannot parse exactly back to oclif.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Flags, Parser } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { edgeProxyArgs } from '../../../src/cli/agent-argv.js';
import { EDGE_PROXY_FLAG_SPECS, parseEdgeProxyArgs } from '../../../src/cli/agent-fast-path.js';
import { renderEdgeProxyUnit } from '../../../src/cluster/edge-proxy-unit.js';
import AgentEdgeProxy from '../../../src/commands/agent/edge-proxy.js';
import { unitEnvironment } from '../../support/unit-sandbox/index.js';

const commandFlags = {
  ...AgentEdgeProxy.baseFlags,
  ...AgentEdgeProxy.flags,
  json: Flags.boolean({ summary: 'Format output as json.' }),
};

/** oclif's parse of the same arguments, as the command sees it, or the error it raises. */
async function oclifParse(args: string[]): Promise<Record<string, unknown> | Error> {
  try {
    const { flags } = await Parser.parse(args, { flags: commandFlags, args: {}, strict: true });
    return flags;
  } catch (error) {
    return error as Error;
  }
}

const KUBECONFIG = ['--kubeconfig', '/etc/edgeadm/upstream.yaml'];

describe('agent edge-proxy lean path: the flag table', () => {
  it('has exactly the flags of the oclif command, with the same kind, default and constraints', () => {
    expect(Object.keys(EDGE_PROXY_FLAG_SPECS).sort()).toEqual(Object.keys(commandFlags).sort());
    for (const [name, flag] of Object.entries(commandFlags)) {
      const spec = EDGE_PROXY_FLAG_SPECS[name]!;
      const options = flag as {
        type: string;
        default?: unknown;
        required?: boolean;
        multiple?: boolean;
        min?: number;
        dependsOn?: string[];
        char?: string;
        env?: string;
        allowNo?: boolean;
      };
      expect({ name, boolean: spec.kind === 'boolean' }).toEqual({ name, boolean: options.type === 'boolean' });
      expect({ name, integer: spec.kind === 'integer' }).toEqual({
        name,
        integer: typeof options.default === 'number' || options.min !== undefined,
      });
      expect({ name, default: spec.default }).toEqual({ name, default: options.default });
      expect({ name, required: spec.required ?? false }).toEqual({ name, required: options.required ?? false });
      expect({ name, multiple: spec.multiple ?? false }).toEqual({ name, multiple: options.multiple ?? false });
      expect({ name, min: spec.min }).toEqual({ name, min: options.min });
      expect({ name, dependsOn: spec.dependsOn }).toEqual({ name, dependsOn: options.dependsOn });
      // Spellings the lean parser does not know must not exist.
      expect({ name, char: options.char, env: options.env, allowNo: options.allowNo ?? false }).toEqual({
        name,
        char: undefined,
        env: undefined,
        allowNo: false,
      });
    }
  });
});

describe('agent edge-proxy lean path: parsing', () => {
  const accepted: string[][] = [
    KUBECONFIG,
    ['--kubeconfig=/etc/up.yaml', '--listen=0.0.0.0:10261', '--json'],
    [...KUBECONFIG, '--cache-max-entries', '20000', '--cache-max-bytes', '1Gi', '--verbose'],
    [...KUBECONFIG, '--tls-cert', '/c.pem', '--tls-key', '/k.pem', '--client-ca-file', '/ca.pem'],
    [...KUBECONFIG, '--client-cert-map', 'a=/1,/2', '--client-cert-map=b=/3,/4', '--metrics-listen', 'none'],
    [...KUBECONFIG, '--health-interval', '10s', '--cache-dir', '/var/lib/x', '--log-file', '/tmp/run.log'],
  ];
  for (const args of accepted) {
    it(`parses ${args.join(' ')} to the values oclif gives the command`, async () => {
      const lean = parseEdgeProxyArgs(args, {});
      const oclif = await oclifParse(args);
      expect(oclif).not.toBeInstanceOf(Error);
      const expected = oclif as Record<string, unknown>;
      expect(lean).toBeDefined();
      expect(lean!.json).toBe(expected.json === true);
      expect(lean!.verbose).toBe(expected.verbose === true);
      expect(lean!.logFile).toBe(expected['log-file']);
      for (const [name, value] of Object.entries(lean!.flags))
        expect({ name, value }).toEqual({ name, value: expected[name] });
    });
  }

  const handedBack: Array<[string, string[]]> = [
    ['--help', [...KUBECONFIG, '--help']],
    ['-h', ['-h']],
    ['an unknown flag', [...KUBECONFIG, '--listn', '1.2.3.4:5']],
    ['a positional argument', [...KUBECONFIG, 'extra']],
    ['a flag without its value', ['--kubeconfig']],
    ['a value that looks like a flag', ['--kubeconfig', '--json']],
    ['an empty value', ['--kubeconfig=']],
    ['a repeated single-valued flag', [...KUBECONFIG, ...KUBECONFIG]],
    ['a missing required flag', ['--listen', '127.0.0.1:1']],
    ['--tls-cert without --tls-key', [...KUBECONFIG, '--tls-cert', '/c.pem']],
    ['an integer below its minimum', [...KUBECONFIG, '--cache-max-entries', '0']],
    ['a non-integer', [...KUBECONFIG, '--cache-max-entries', '1e3']],
    ['a boolean with a value', [...KUBECONFIG, '--json=true']],
    ['the -- separator', [...KUBECONFIG, '--']],
  ];
  for (const [what, args] of handedBack) {
    it(`hands ${what} back to oclif`, () => {
      expect(parseEdgeProxyArgs(args, {})).toBeUndefined();
    });
  }

  it('hands JSON output chosen by EDGEADM_CONTENT_TYPE back to oclif', () => {
    expect(parseEdgeProxyArgs(KUBECONFIG, {})).toBeDefined();
    expect(parseEdgeProxyArgs(KUBECONFIG, { EDGEADM_CONTENT_TYPE: 'json' })).toBeUndefined();
  });

  it('is taken only by agent edge-proxy, in the space or colon form', () => {
    expect(edgeProxyArgs(['agent', 'edge-proxy', ...KUBECONFIG])).toEqual(KUBECONFIG);
    expect(edgeProxyArgs(['agent:edge-proxy', ...KUBECONFIG])).toEqual(KUBECONFIG);
    expect(edgeProxyArgs(['agent', 'tunnel', ...KUBECONFIG])).toBeUndefined();
    expect(edgeProxyArgs(['version'])).toBeUndefined();
  });
});

describe('the systemd unit of edge-proxy', () => {
  const unit = readFileSync(new URL('../../../assets/systemd/edgeadm-edge-proxy.service', import.meta.url), 'utf8');

  it('starts the agent through the lean path: every flag of its ExecStart parses there', () => {
    // The unit as join --enable-edge renders it, for a token node and for a client-certificate node.
    for (const clientCertificate of [
      undefined,
      { commonName: 'system:node:n1', certFile: '/c.crt', keyFile: '/c.key', caFile: '/ca.crt' },
    ]) {
      const rendered = renderEdgeProxyUnit({
        edgeadmBin: '/usr/local/bin/edgeadm',
        upstreamKubeconfig: '/etc/kubelet.kubeconfig',
        cacheMaxBytes: '256Mi',
        cacheMaxEntries: 10_000,
        ...(clientCertificate ? { clientCertificate } : {}),
      });
      const execStart = /^ExecStart=((?:.*\\\n)*.*)$/m.exec(rendered)![1]!.replace(/\\\n/g, ' ');
      const argv = execStart.split(/\s+/).filter(Boolean).slice(1);
      expect(argv.slice(0, 2)).toEqual(['agent', 'edge-proxy']);
      const parsed = parseEdgeProxyArgs(edgeProxyArgs(argv)!, {});
      expect(parsed).toBeDefined();
      expect(parsed!.flags['cache-dir']).toBe('/var/lib/edgeadm/edge-proxy');
      expect(parsed!.flags['cache-max-entries']).toBe(10_000);
    }
  });

  it('sets only NODE_OPTIONS that Node accepts (a refused one would stop the service from starting)', () => {
    // Read as systemd reads Environment= (words, double quotes kept together).
    const environment = unitEnvironment(unit);
    expect(environment.NODE_OPTIONS).toContain('--jitless');
    const run = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.execArgv.length))'], {
      env: { ...process.env, ...environment },
      encoding: 'utf8',
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  });
});
