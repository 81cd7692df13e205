/**
 * Entry of the SIMULATED k3s executable (not k3s): the fixture install
 * package ships `bin/k3s`, a two-line shell script that runs this file with
 * Node 24 inside a test host. See README.md beside it.
 *
 * Node runs the TypeScript directly (type stripping); the resolve hook maps
 * the `./x.js` specifiers of the test support modules to their `.ts` files,
 * as sim-apiserver/main.ts does for its own directory.
 */
import { registerHooks } from 'node:module';

const SUPPORT = new URL('../', import.meta.url).href;

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

const { runSimK3s } = await import('./sim-k3s.js');
// Heartbeat timers would keep the process alive after the server stops.
process.exit(await runSimK3s(process.argv.slice(2)));
