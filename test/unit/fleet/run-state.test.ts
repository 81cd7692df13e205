import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendHostLog,
  countStatuses,
  hostLogPath,
  loadRunState,
  newRunState,
  runDirectory,
  saveRunState,
} from '../../../src/fleet/run-state.js';

describe('run state files', () => {
  it('saves atomically under fleet/runs/<id> and loads by id or as the last run', async () => {
    const home = mkdtempSync(join(tmpdir(), 'fleet-state-'));
    const older = newRunState({
      command: 'check',
      inventory: 'i.yaml',
      hosts: ['a'],
      now: new Date(0),
      id: '19700101-a',
    });
    const state = newRunState({ command: 'check', inventory: 'i.yaml', hosts: ['a', 'b'], now: new Date(1e12) });
    state.hosts.a = { status: 'done', attempts: 1, durationMs: 5 };
    await saveRunState(runDirectory(home, older.id), older);
    const dir = runDirectory(home, state.id);
    expect(dir).toBe(join(home, 'fleet', 'runs', state.id));
    await saveRunState(dir, state);
    expect(readdirSync(dir).sort()).toEqual(['hosts', 'state.json']);
    expect((await loadRunState(home, state.id)).state).toEqual(state);
    expect((await loadRunState(home, 'last')).state.id).toBe(state.id);
    expect(countStatuses(state)).toMatchObject({ done: 1, pending: 1 });

    await appendHostLog(dir, 'store-1', 'connected', new Date(0));
    expect(readFileSync(join(dir, 'hosts', 'store-1.log'), 'utf8')).toBe(
      '1970-01-01T00:00:00.000Z [store-1] connected\n',
    );
    // A multi-line entry (an error with its details) names the host on each of its lines.
    await appendHostLog(dir, 'store-1', 'failed: E_PREFLIGHT\n  [ERROR port-10250]: in use', new Date(0));
    expect(
      readFileSync(join(dir, 'hosts', 'store-1.log'), 'utf8')
        .split('\n')
        .slice(1, 3),
    ).toEqual([
      '1970-01-01T00:00:00.000Z [store-1] failed: E_PREFLIGHT',
      '1970-01-01T00:00:00.000Z [store-1]   [ERROR port-10250]: in use',
    ]);
  });

  it('gives every host its own log file, whatever its name, and names the host on every line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleet-logs-'));
    const names = ['a b', 'a_b', 'a/b', 'a\nb', 'a_b~', '..', 'A_B', 'a.b', 'a-b'];
    for (const name of names) await appendHostLog(dir, name, `line of ${JSON.stringify(name)}`, new Date(0));
    const paths = names.map((name) => hostLogPath(dir, name));
    expect(new Set(paths).size).toBe(names.length);
    expect(readdirSync(join(dir, 'hosts'))).toHaveLength(names.length);
    for (const [index, name] of names.entries()) {
      expect(paths[index]!.startsWith(join(dir, 'hosts') + '/')).toBe(true);
      expect(readFileSync(paths[index]!, 'utf8')).toBe(
        `1970-01-01T00:00:00.000Z [${name}] line of ${JSON.stringify(name)}\n`,
      );
    }
    expect(hostLogPath(dir, 'a_b')).toBe(join(dir, 'hosts', 'a_b.log'));
  });

  it('refuses unsafe run ids and missing runs', async () => {
    expect(() => runDirectory('/h', '../x')).toThrow(/invalid fleet run id/);
    await expect(loadRunState(mkdtempSync(join(tmpdir(), 'fleet-state-')), 'last')).rejects.toThrow(/no fleet run/);
  });
});
