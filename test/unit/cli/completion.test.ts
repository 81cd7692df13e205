/** The completion script, run by the real bash with the words a user typed. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { completionScript } from '../../../src/cli/completion.js';

const COMMANDS = [
  { id: 'init', flags: ['host', 'dry-run'] },
  { id: 'init:phase:preflight', flags: ['host'] },
  { id: 'hub:serve', flags: ['listen', 'data-dir'] },
  { id: 'hub:token:create', flags: ['ttl'] },
  { id: 'token:list', flags: ['kubeconfig'] },
];

/** What bash completes for `edgeadm <words…>` with the cursor on the last word. */
function complete(...words: string[]): string[] {
  const line = ['edgeadm', ...words];
  const script = `${completionScript('bash', COMMANDS)}
COMP_WORDS=(${line.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${line.length - 1}
_edgeadm; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', script], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

describe('completion bash (newcomer point 18)', () => {
  it('completes the first word from the commands and topics', () => {
    expect(complete('')).toEqual(['hub', 'init', 'token']);
    expect(complete('h')).toEqual(['hub']);
  });

  it('completes a topic’s commands', () => {
    expect(complete('hub', '')).toEqual(['serve', 'token']);
    expect(complete('hub', 'token', 'c')).toEqual(['create']);
  });

  it('completes the flags of the command typed, also after other flags', () => {
    expect(complete('hub', 'serve', '--')).toEqual(['--data-dir', '--listen']);
    expect(complete('init', '--host', 'root@x', '--d')).toEqual(['--dry-run']);
  });

  it('offers no command words after a flag', () => {
    expect(complete('init', '--host', '')).toEqual([]);
  });

  it('prefixes the zsh script with bashcompinit', () => {
    expect(completionScript('zsh', COMMANDS)).toMatch(/bashcompinit[\s\S]*complete -o default -F _edgeadm edgeadm/);
  });
});
