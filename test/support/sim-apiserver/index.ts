/**
 * The public surface of the SIMULATED Kubernetes API server used by
 * edgeadm's tests (see README.md beside this file). It is a stand-in for
 * kube-apiserver in tests only — never ship it or describe it as the real
 * thing.
 */
export {
  startSimApiServer,
  ADMIN_USER,
  DEFAULT_SIM_GIT_VERSION,
  PORT_FORWARD_ANNOTATION_PREFIX,
} from './sim-apiserver.js';
export type {
  KubeconfigOptions,
  ObjectRef,
  RecordedRequest,
  SimApiServer,
  SimApiServerOptions,
  SimCounters,
} from './sim-apiserver.js';
export { UNPULLABLE_IMAGE_REGISTRY, FAILING_IMAGE_REGISTRY, CONTROLLER_MANAGER } from './workload-controllers.js';
export type { WorkloadControllerOptions } from './workload-controllers.js';
export type { KubeObject, ManagedFieldsEntry, ObjectMeta, StoreSnapshot } from './store.js';
export type { TokenIdentity } from './authn.js';
export type { CertificateAndKey, ClientIdentity } from './pki.js';
export type { ExecCommand, ExecContext } from './exec.js';
export type { PortForwardTarget } from './port-forward.js';
export type { ResourceDefinition } from './resources.js';
export { connectWebSocket, WebSocketHandshakeError } from './websocket-connection.js';
export type { WebSocketConnection } from './websocket-connection.js';
export { runKubectl, startKubectl, KUBECTL_PATH } from './kubectl.js';
export type { KubectlOptions, KubectlProcess, KubectlResult } from './kubectl.js';
