/**
 * Entry of the SIMULATED distribution executables (none of them real): the
 * fixture install packages ship `bin/k3s`, `bin/kubeadm`, `bin/kubelet` and
 * `bin/containerd` (and `bin/ctr`) as two-line shell scripts running
 * `node sim-main.ts <tool> "$@"` inside a test host. See sim-k3s/README.md
 * and sim-kubeadm/README.md.
 *
 * Node runs the TypeScript directly (type stripping); the resolve hook maps
 * the `./x.js` specifiers of the test support modules to their `.ts` files,
 * as sim-apiserver/main.ts does for its own directory. That is why the tool
 * is loaded with a dynamic import after the hook.
 */
import { registerHooks } from 'node:module';

const SUPPORT = new URL('./', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const isSupportModule = specifier.startsWith('.') && (context.parentURL ?? '').startsWith(SUPPORT);
    if (isSupportModule && specifier.endsWith('.js')) {
      try {
        return nextResolve(specifier, context);
      } catch {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
      }
    }
    return nextResolve(specifier, context);
  },
});

type Tool = (argv: string[]) => Promise<number>;

const TOOLS: Record<string, () => Promise<Tool>> = {
  k3s: async () => (await import('./sim-k3s/sim-k3s.js')).runSimK3s,
  kubeadm: async () => (await import('./sim-kubeadm/kubeadm.js')).runSimKubeadm,
  kubelet: async () => (await import('./sim-kubeadm/kubelet.js')).runSimKubelet,
  containerd: async () => (await import('./sim-kubeadm/containerd.js')).runSimContainerd,
  ctr: async () => (await import('./sim-kubeadm/containerd.js')).runSimCtr,
};

const [tool = '', ...args] = process.argv.slice(2);
const load = TOOLS[tool];
if (!load) {
  process.stderr.write(`usage: sim-main.ts ${Object.keys(TOOLS).join('|')} ARGS... (simulations for edgeadm tests)\n`);
  process.exit(2);
}
// Heartbeat timers would keep the process alive after the tool is done.
process.exit(await (await load())(args));
