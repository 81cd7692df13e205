/**
 * The COMMANDS map: oclif's "explicit" command discovery, so that the whole
 * CLI can be bundled into one file for the single binary.
 */
import type { Command } from '@oclif/core';
import { notBuiltCommand } from './cli/not-built.js';
import { PLANNED_COMMANDS } from './cli/planned-commands.js';
import AgentAutonomy from './commands/agent/autonomy.js';
import AgentSiteGridController from './commands/agent/site-grid-controller.js';
import AgentEdgeProxy from './commands/agent/edge-proxy.js';
import CertsCaHash from './commands/certs/ca-hash.js';
import ConfigPrint from './commands/config/print.js';
import FleetCheck from './commands/fleet/check.js';
import FleetJoin from './commands/fleet/join.js';
import FleetPlan from './commands/fleet/plan.js';
import FleetReset from './commands/fleet/reset.js';
import FleetUp from './commands/fleet/up.js';
import FleetUpgrade from './commands/fleet/upgrade.js';
import HostCheck from './commands/host/check.js';
import HostResolve from './commands/host/resolve.js';
import Init from './commands/init.js';
import { initPhaseCommands } from './commands/init/phase/index.js';
import Join from './commands/join.js';
import { joinPhaseCommands } from './commands/join/phase/index.js';
import JoinPhaseDiscovery from './commands/join/phase/discovery.js';
import PackageBuild from './commands/package/build.js';
import PackageInspect from './commands/package/inspect.js';
import PackageKeygen from './commands/package/keygen.js';
import PackageSign from './commands/package/sign.js';
import PackageVerify from './commands/package/verify.js';
import Reset from './commands/reset.js';
import TokenCreate from './commands/token/create.js';
import TokenDelete from './commands/token/delete.js';
import TokenGenerate from './commands/token/generate.js';
import TokenList from './commands/token/list.js';
import SitesList from './commands/sites/list.js';
import UpgradeApply from './commands/upgrade/apply.js';
import UpgradePlan from './commands/upgrade/plan.js';
import UpgradeNode from './commands/upgrade/node.js';
import Completion from './commands/completion.js';
import Version from './commands/version.js';
import HubServe from './commands/hub/serve.js';
import HubMigrate from './commands/hub/migrate.js';
import HubEncryptionKeyCreate from './commands/hub/encryption-key/create.js';
import HubTokenCreate from './commands/hub/token/create.js';
import HubTokenDelete from './commands/hub/token/delete.js';
import HubTokenList from './commands/hub/token/list.js';
import HubClustersList from './commands/hub/clusters/list.js';
import HubClustersGet from './commands/hub/clusters/get.js';
import HubClustersDelete from './commands/hub/clusters/delete.js';
import HubUserCreate from './commands/hub/user/create.js';
import HubUserDelete from './commands/hub/user/delete.js';
import HubUserList from './commands/hub/user/list.js';
import HubClustersHold from './commands/hub/clusters/hold.js';
import HubClustersRelease from './commands/hub/clusters/release.js';
import HubClustersSetProperties from './commands/hub/clusters/set-properties.js';
import HubReplicasList from './commands/hub/replicas/list.js';
import HubCertsCheck from './commands/hub/certs/check.js';
import HubRolloutApply from './commands/hub/rollout/apply.js';
import HubRolloutStatus from './commands/hub/rollout/status.js';
import HubRolloutList from './commands/hub/rollout/list.js';
import HubRolloutGet from './commands/hub/rollout/get.js';
import HubRolloutPause from './commands/hub/rollout/pause.js';
import HubRolloutResume from './commands/hub/rollout/resume.js';
import HubRolloutAbort from './commands/hub/rollout/abort.js';
import HubRolloutUndo from './commands/hub/rollout/undo.js';
import HubRolloutDelete from './commands/hub/rollout/delete.js';
import RegisterCloud from './commands/register-cloud.js';
import Kubeconfig from './commands/kubeconfig.js';
import Kubectl from './commands/kubectl.js';
import AgentNodeTunnel from './commands/agent/node-tunnel.js';
import AgentNodeTunnelServer from './commands/agent/node-tunnel-server.js';
import AgentTunnel from './commands/agent/tunnel.js';
import AgentUninstall from './commands/agent/uninstall.js';

const BUILT_COMMANDS: Record<string, Command.Class> = {
  completion: Completion,
  version: Version,
  'agent:autonomy': AgentAutonomy,
  'agent:site-grid-controller': AgentSiteGridController,
  'agent:edge-proxy': AgentEdgeProxy,
  'host:check': HostCheck,
  'host:resolve': HostResolve,
  'fleet:check': FleetCheck,
  'fleet:plan': FleetPlan,
  'fleet:reset': FleetReset,
  'fleet:join': FleetJoin,
  'fleet:up': FleetUp,
  'fleet:upgrade': FleetUpgrade,
  'package:build': PackageBuild,
  'package:verify': PackageVerify,
  'package:inspect': PackageInspect,
  'package:keygen': PackageKeygen,
  'package:sign': PackageSign,
  'token:generate': TokenGenerate,
  'sites:list': SitesList,
  'certs:ca-hash': CertsCaHash,
  'join:phase:discovery': JoinPhaseDiscovery,
  'hub:serve': HubServe,
  'hub:migrate': HubMigrate,
  'hub:encryption-key:create': HubEncryptionKeyCreate,
  'hub:token:create': HubTokenCreate,
  'hub:token:delete': HubTokenDelete,
  'hub:token:list': HubTokenList,
  'hub:clusters:list': HubClustersList,
  'hub:clusters:get': HubClustersGet,
  'hub:clusters:delete': HubClustersDelete,
  'hub:user:create': HubUserCreate,
  'hub:user:delete': HubUserDelete,
  'hub:user:list': HubUserList,
  'hub:clusters:hold': HubClustersHold,
  'hub:clusters:release': HubClustersRelease,
  'hub:clusters:set-properties': HubClustersSetProperties,
  'hub:replicas:list': HubReplicasList,
  'hub:certs:check': HubCertsCheck,
  'hub:rollout:apply': HubRolloutApply,
  'hub:rollout:status': HubRolloutStatus,
  'hub:rollout:list': HubRolloutList,
  'hub:rollout:get': HubRolloutGet,
  'hub:rollout:pause': HubRolloutPause,
  'hub:rollout:resume': HubRolloutResume,
  'hub:rollout:abort': HubRolloutAbort,
  'hub:rollout:undo': HubRolloutUndo,
  'hub:rollout:delete': HubRolloutDelete,
  'register-cloud': RegisterCloud,
  kubeconfig: Kubeconfig,
  kubectl: Kubectl,
  'agent:node-tunnel': AgentNodeTunnel,
  'agent:node-tunnel-server': AgentNodeTunnelServer,
  'agent:tunnel': AgentTunnel,
  'agent:uninstall': AgentUninstall,
  init: Init,
  ...initPhaseCommands(),
  join: Join,
  ...joinPhaseCommands(),
  reset: Reset,
  'token:create': TokenCreate,
  'token:list': TokenList,
  'token:delete': TokenDelete,
  'config:print': ConfigPrint,
  'upgrade:apply': UpgradeApply,
  'upgrade:plan': UpgradePlan,
  'upgrade:node': UpgradeNode,
};

/** Every command id (oclif's `topic:command` form) to its class. */
export const COMMANDS: Record<string, Command.Class> = {
  ...Object.fromEntries(Object.entries(PLANNED_COMMANDS).map(([id, planned]) => [id, notBuiltCommand(planned)])),
  ...BUILT_COMMANDS,
};
