/**
 * The entry point: kubeadm's ways of asking for help, and "did you mean"
 * for an unknown command. Runs the built command table (`npm run build`).
 */
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { helpAsFlag, main } from '../../../src/cli/main.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
let stdout: string;
let stderr: string;

beforeEach(() => {
  vi.stubEnv('NO_COLOR', '1');
  stdout = '';
  stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    stdout += `${args.join(' ')}\n`;
  });
});

describe('help as kubeadm users ask for it (newcomer point 18)', () => {
  it('takes `help init` as `init --help`', () => {
    expect(helpAsFlag(['help', 'hub', 'serve'])).toEqual(['hub', 'serve', '--help']);
    expect(helpAsFlag(['help'])).toEqual(['--help']);
    expect(helpAsFlag(['init', 'help'])).toEqual(['init', 'help']);
  });

  it('prints a command’s help for `help CMD` and for `CMD -h`', async () => {
    expect(await main(['help', 'version'], { root })).toBe(0);
    expect(stdout).toContain('Print the edgeadm version');
    stdout = '';
    expect(await main(['version', '-h'], { root })).toBe(0);
    expect(stdout).toContain('Print the edgeadm version');
  });

  it('prints a completion script for bash', async () => {
    expect(await main(['completion', 'bash'], { root })).toBe(0);
    expect(stdout).toContain('complete -o default -F _edgeadm edgeadm');
    expect(stdout).toContain("'hub token') words=");
  });
});

describe('an unknown command', () => {
  it('is named as typed, with the closest command as a hint (newcomer point 18)', async () => {
    expect(await main(['tokens', 'list'], { root })).toBe(3);
    expect(stderr).toContain('unknown command "tokens list"');
    expect(stderr).toContain('Did you mean "edgeadm token list"');
    expect(stderr).not.toContain('tokens:list');
  });
});
