import { Flags } from '@oclif/core';
import { BaseCommand } from '../../../cli/base-command.js';
import { hubConfigFlags } from '../../../cli/flags/hub-flags.js';
import { HubClient } from '../../../hub-client/hub-client.js';
import { renderApplyResult } from '../../../hub-client/rollout-table.js';
import { loadHubConfig } from '../../../hub/contract/hub-config.js';
import type { ApplyResult } from '../../../rollout/api.js';
import { readBoundedStream, readRolloutFile } from '../../../rollout/rollout-file.js';
import { dryRunFlag } from '../../../cli/flags/run-flags.js';

/** A complete Rollout, shown by `--help` (the parser's errors point here). */
const EXAMPLE_ROLLOUT = `apiVersion: edgeadm.io/v1alpha1
kind: Rollout
metadata:
  name: web
spec:
  placement:
    clusterSelector: env=prod            # and/or clusters: [store-001, store-002]
  resources:                             # inline objects; CRDs and Namespaces are applied first
    - apiVersion: v1
      kind: Namespace
      metadata: {name: shop}
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: site, namespace: shop}
      data:
        site: \${cluster.name}            # per cluster: its name,
        region: \${label:region}          # one of its labels,
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: shop}
      spec:
        replicas: 2
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec:
            containers:
              - name: web
                image: registry.example.com/web:\${property:tag|1.4.2}   # or a property, with a fallback
  resourcesFrom:                         # optional: manifests read when applied, relative to this file
    - path: manifests/                   # *.yaml, *.yml, *.json in name order; recursive: true for subdirectories
  customization:
    patches:                             # JSON merge patches for the clusters a selector matches
      - clusterSelector: size=large
        target: {kind: Deployment, name: web}
        patch: {spec: {replicas: 4}}
  strategy:
    waves: [1, "10%", "100%"]            # a canary, then 10 % of the clusters, then all
    maxUnavailable: "10%"
    failureBudget: 2                     # more failed clusters than this halt the rollout
    soakSeconds: 60                      # a wave stays ready this long before the next starts
    deadlineSeconds: 600                 # a cluster not ready by then counts as failed
  status:
    summaries:
      - {name: min-available, reduce: min, field: .status.availableReplicas, kind: Deployment, objectName: web}
      - {name: updated, reduce: count, field: .status.updatedReplicas, kind: Deployment}`;

export default class HubRolloutApply extends BaseCommand<typeof HubRolloutApply> {
  static override summary = 'Create or update a rollout from a Rollout file; --dry-run shows what it would do.';
  static override description = `The file (YAML or JSON, "-" for stdin) is read and checked here, with the manifests that spec.resourcesFrom names (they must lie under the file's directory), before anything is sent: a mistake is reported with its field and changes nothing. Prints the new revision; with --dry-run, the clusters of each wave and each cluster's rendered objects, changing nothing.

Placeholders in any string: \${cluster.name}, \${label:KEY}, \${property:KEY} (set with "edgeadm hub clusters set-properties"), each of the last two with an optional "|fallback"; $\${ is a literal \${.

A complete Rollout file is the last example below.`;
  static override examples = [
    '<%= config.bin %> hub rollout apply -f web-rollout.yaml',
    '<%= config.bin %> hub rollout apply -f web-rollout.yaml --dry-run',
    '<%= config.bin %> hub rollout apply -f - --json < web-rollout.yaml',
    `# A complete Rollout file, web-rollout.yaml:\n${EXAMPLE_ROLLOUT}`,
  ];
  static override flags = {
    ...hubConfigFlags,
    file: Flags.string({ char: 'f', required: true, summary: 'The Rollout file; "-" reads stdin.', helpValue: 'FILE' }),
    'dry-run': dryRunFlag('Show the waves and the rendered copies; store and change nothing.'),
  };

  async run(): Promise<ApplyResult> {
    const loaded = await readRolloutFile({ path: this.flags.file, readStdin: () => readBoundedStream(process.stdin) });
    const client = new HubClient(loadHubConfig(this.flags['hub-config']));
    const result = await client.applyRollout(loaded.document, { dryRun: this.flags['dry-run'] });
    this.log(renderApplyResult(result));
    return result;
  }
}
