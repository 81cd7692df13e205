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

    await appendHostLog(dir, 'a/b', 'connected', new Date(0));
    expect(readFileSync(hostLogPath(dir, 'a/b'), 'utf8')).toBe('1970-01-01T00:00:00.000Z connected\n');
  });

  it('refuses unsafe run ids and missing runs', async () => {
    expect(() => runDirectory('/h', '../x')).toThrow(/invalid fleet run id/);
    await expect(loadRunState(mkdtempSync(join(tmpdir(), 'fleet-state-')), 'last')).rejects.toThrow(/no fleet run/);
  });
});
