/**
 * The one place where edgeadm loads its X.509 library (@peculiar/x509).
 *
 * The library resolves its algorithm providers through a dependency-injection
 * container that needs the Reflect metadata API, so the polyfill must be
 * evaluated before the library itself; and it must use Node's WebCrypto.
 * Every trust module imports `x509` from here, never from the package, so
 * that both always hold whatever module is loaded first.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto);

export { x509 };
