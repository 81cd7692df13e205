// Lets Node 24 run the repo's TypeScript benchmarks directly (type
// stripping): the sources import each other as `./x.js`, the way tsc
// resolves them; this hook maps such a specifier to the `.ts` file when no
// `.js` file exists, for files inside this repository only.
//
//   node --import ./bench/support/register-ts.js bench/<name>/run.ts
import { registerHooks } from 'node:module';

const REPO = new URL('../../', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const isRelative = specifier.startsWith('./') || specifier.startsWith('../');
    if (isRelative && specifier.endsWith('.js') && (context.parentURL ?? '').startsWith(REPO)) {
      try {
        return nextResolve(specifier, context);
      } catch {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
      }
    }
    return nextResolve(specifier, context);
  },
});
