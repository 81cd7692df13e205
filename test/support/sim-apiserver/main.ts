/**
 * Command-line entry of the SIMULATED Kubernetes API server, for processes
 * that cannot hold the in-process handle (the stand-in k3s executable
 * launches it inside a test host):
 *
 *   node test/support/sim-apiserver/main.ts --listen 10.0.0.1:6443 --data-dir DIR
 *
 * Node 24 runs this TypeScript directly (type stripping). The sibling
 * modules import each other as `./x.js`, the way tsc and vitest resolve
 * them; the resolve hook registered here maps such a specifier to the `.ts`
 * file when no `.js` file exists, and only inside this directory. That is
 * why everything else is loaded with a dynamic import after the hook.
 */
import { registerHooks } from 'node:module';

const HERE = new URL('./', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const isSibling = specifier.startsWith('./') && (context.parentURL ?? '').startsWith(HERE);
    if (isSibling && specifier.endsWith('.js')) {
      try {
        return nextResolve(specifier, context);
      } catch {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
      }
    }
    return nextResolve(specifier, context);
  },
});

const { runCli } = await import('./cli.js');
process.exitCode = await runCli(process.argv.slice(2));
