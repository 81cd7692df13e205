import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { readRolloutFile, resolveRolloutDocument } from '../../../src/rollout/rollout-file.js';
import { ValidationError } from '../../../src/errors.js';

const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } };

function configMap(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'shop' },
    data: { site: '${cluster.name}' },
  };
}

function rolloutYaml(spec: Record<string, unknown>): string {
  return dump({
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'web' },
    spec: { placement: { clusterSelector: 'env=prod' }, ...spec },
  });
}

/** A directory with the given files (relative path → content). */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollout-file-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

function names(resources: unknown[]): string[] {
  return resources.map((r) => (r as { metadata: { name: string } }).metadata.name);
}

async function failure(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe('reading a Rollout file', () => {
  it('takes inline resources as they are, from YAML and from JSON', async () => {
    const yaml = rolloutYaml({ resources: [NAMESPACE, configMap('site')] });
    const dir = tree({ 'rollout.yaml': yaml, 'rollout.json': JSON.stringify({ ...(await load(yaml)) }) });
    for (const file of ['rollout.yaml', 'rollout.json']) {
      const loaded = await readRolloutFile({ path: join(dir, file) });
      expect(names(loaded.spec.resources)).toEqual(['shop', 'site']);
      expect(loaded.origins).toEqual(['inline', 'inline']);
    }
  });

  it('reads referenced files and directories relative to the Rollout file, inline first, directories in name order, multi-document YAML and Lists expanded', async () => {
    const dir = tree({
      'app/rollout.yaml': rolloutYaml({
        resources: [NAMESPACE],
        resourcesFrom: [{ path: 'manifests' }, { path: 'extra/list.json' }],
      }),
      'app/manifests/b.yaml': `${dump(configMap('b1'))}---\n${dump(configMap('b2'))}---\n`,
      'app/manifests/a.yml': dump(configMap('a')),
      'app/manifests/README.md': 'not a manifest',
      'app/manifests/nested/c.yaml': dump(configMap('nested')),
      'app/extra/list.json': JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [configMap('l1'), configMap('l2')],
      }),
    });
    const loaded = await readRolloutFile({ path: 'app/rollout.yaml', cwd: dir });
    expect(names(loaded.spec.resources)).toEqual(['shop', 'a', 'b1', 'b2', 'l1', 'l2']);
    expect(loaded.origins).toEqual([
      'inline',
      'manifests/a.yml',
      'manifests/b.yaml, document 1',
      'manifests/b.yaml, document 2',
      'extra/list.json, item 0',
      'extra/list.json, item 1',
    ]);
    // What is sent is self-contained: the references are gone, the objects are in spec.resources.
    const spec = loaded.document['spec'] as Record<string, unknown>;
    expect(spec['resourcesFrom']).toBeUndefined();
    expect(names(spec['resources'] as unknown[])).toEqual(['shop', 'a', 'b1', 'b2', 'l1', 'l2']);
  });

  it('walks subdirectories only with recursive: true', async () => {
    const dir = tree({
      'rollout.yaml': rolloutYaml({ resourcesFrom: [{ path: 'm', recursive: true }] }),
      'm/a.yaml': dump(configMap('a')),
      'm/b/c.yaml': dump(configMap('c')),
      'm/z.yaml': dump(configMap('z')),
    });
    const loaded = await readRolloutFile({ path: join(dir, 'rollout.yaml') });
    expect(names(loaded.spec.resources)).toEqual(['a', 'c', 'z']);
  });

  it('reads stdin for "-", with references relative to the current directory', async () => {
    const dir = tree({ 'm/a.yaml': dump(configMap('a')) });
    const loaded = await readRolloutFile({
      path: '-',
      cwd: dir,
      readStdin: () => Promise.resolve(rolloutYaml({ resourcesFrom: [{ path: 'm' }] })),
    });
    expect(names(loaded.spec.resources)).toEqual(['a']);
  });

  it('names a missing file, a missing reference and a YAML error with its file and line', async () => {
    const dir = tree({
      'rollout.yaml': rolloutYaml({ resourcesFrom: [{ path: 'gone' }] }),
      'bad.yaml': rolloutYaml({ resourcesFrom: [{ path: 'm' }] }),
      'm/broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n',
    });
    expect((await failure(readRolloutFile({ path: join(dir, 'nope.yaml') }))).message).toContain('no such file');
    const missing = await failure(readRolloutFile({ path: join(dir, 'rollout.yaml') }));
    expect(missing.message).toMatch(/spec\.resourcesFrom\[0\]\.path: gone cannot be read \(no such file/);
    const yaml = await failure(readRolloutFile({ path: join(dir, 'bad.yaml') }));
    expect(yaml.code).toBe('E_ROLLOUT_YAML');
    expect(yaml.message).toMatch(/^m\/broken\.yaml is not valid YAML or JSON at line 4/);
  });

  it('names the file a bad resource came from', async () => {
    const dir = tree({
      'rollout.yaml': rolloutYaml({ resources: [NAMESPACE], resourcesFrom: [{ path: 'm' }] }),
      'm/a.yaml': `${dump(configMap('a'))}---\n${dump({ apiVersion: 'v1', kind: 'ConfigMap', metadata: {} })}`,
    });
    const error = await failure(readRolloutFile({ path: join(dir, 'rollout.yaml') }));
    expect(error.code).toBe('E_ROLLOUT_INVALID');
    expect(error.message).toContain('spec.resources[2].metadata.name');
    expect(error.message).toContain('(read from m/a.yaml, document 2)');
  });

  it('refuses references that leave the Rollout file directory, by path or by symlink', async () => {
    const outside = tree({ 'secret.yaml': dump(configMap('secret')) });
    const dir = tree({
      'up.yaml': rolloutYaml({ resourcesFrom: [{ path: '../x' }] }),
      'abs.yaml': rolloutYaml({ resourcesFrom: [{ path: join(outside, 'secret.yaml') }] }),
      'link.yaml': rolloutYaml({ resourcesFrom: [{ path: 'm' }] }),
      'm/ok.yaml': dump(configMap('ok')),
    });
    symlinkSync(join(outside, 'secret.yaml'), join(dir, 'm', 'secret.yaml'));
    mkdirSync(join(dir, '..', 'x'), { recursive: true });
    for (const file of ['up.yaml', 'abs.yaml', 'link.yaml']) {
      const error = await failure(readRolloutFile({ path: join(dir, file) }));
      expect(error.code, file).toBe('E_ROLLOUT_FILE_OUTSIDE');
    }
  });

  it('follows a symlink that stays inside, and survives a symlink loop', async () => {
    const dir = tree({
      'rollout.yaml': rolloutYaml({ resourcesFrom: [{ path: 'm', recursive: true }] }),
      'm/a.yaml': dump(configMap('a')),
      'shared/s.yaml': dump(configMap('s')),
    });
    symlinkSync(join(dir, 'shared', 's.yaml'), join(dir, 'm', 'b.yaml'));
    symlinkSync(join(dir, 'm'), join(dir, 'm', 'loop'));
    const loaded = await readRolloutFile({ path: join(dir, 'rollout.yaml') });
    expect(names(loaded.spec.resources)).toEqual(['a', 's']);
  });

  it('refuses a file of several Rollouts, and a malformed resourcesFrom', async () => {
    const dir = tree({
      'two.yaml': `${rolloutYaml({ resources: [NAMESPACE] })}---\n${rolloutYaml({ resources: [NAMESPACE] })}`,
      'bad-ref.yaml': rolloutYaml({ resourcesFrom: [{ path: 'm', recurse: true }] }),
    });
    expect((await failure(readRolloutFile({ path: join(dir, 'two.yaml') }))).message).toContain('holds 2 documents');
    expect((await failure(readRolloutFile({ path: join(dir, 'bad-ref.yaml') }))).message).toContain(
      'spec.resourcesFrom[0]: unknown field recurse',
    );
  });

  it('reads a Rollout of more than 10 MiB of manifests', async () => {
    const big = 'x'.repeat(1024 * 1024);
    const files: Record<string, string> = { 'rollout.yaml': rolloutYaml({ resourcesFrom: [{ path: 'm' }] }) };
    for (let i = 0; i < 11; i += 1)
      files[`m/cm-${String(i).padStart(2, '0')}.yaml`] = dump({ ...configMap(`cm${i}`), data: { big } });
    const loaded = await readRolloutFile({ path: join(tree(files), 'rollout.yaml') });
    expect(loaded.spec.resources).toHaveLength(11);
    expect(JSON.stringify(loaded.document).length).toBeGreaterThan(11 * 1024 * 1024);
  });

  it("reads the README's worked example, with the Service from its manifests directory", async () => {
    const loaded = await readRolloutFile({ path: 'examples/web-rollout/rollout.yaml' });
    expect(loaded.spec.resources.map((r) => `${r.kind}/${r.metadata.name}`)).toEqual([
      'Namespace/shop',
      'ConfigMap/site',
      'Deployment/web',
      'Service/web',
    ]);
    expect(loaded.origins.at(-1)).toBe('manifests/service.yaml');
    expect(loaded.spec.summaries.map((summary) => summary.name)).toEqual(['min-available', 'total-available']);
  });

  it('resolves a document given as an object (the library) against a base directory', async () => {
    const dir = tree({ 'm/a.yaml': dump(configMap('a')) });
    const loaded = await resolveRolloutDocument(
      {
        apiVersion: 'edgeadm.io/v1alpha1',
        kind: 'Rollout',
        metadata: { name: 'web' },
        spec: { placement: { clusters: ['store-1'] }, resourcesFrom: [{ path: 'm' }] },
      },
      dir,
    );
    expect(names(loaded.spec.resources)).toEqual(['a']);
  });
});

async function load(text: string): Promise<Record<string, unknown>> {
  const { load: parse } = await import('js-yaml');
  return parse(text) as Record<string, unknown>;
}
