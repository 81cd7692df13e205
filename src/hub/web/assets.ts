/**
 * The web view's static files, served from memory. `npm run build`
 * (scripts/build-web.js) bundles web/ with esbuild into one pack,
 * `lib/web-assets.json`: every file's bytes with its content type, the
 * script and stylesheet under content-hashed names. The single binary
 * carries the same pack as a SEA asset. So the view needs no other file,
 * process or network: it works on an air-gapped hub.
 *
 * Hashed files are cached by browsers for a year (a new build has new
 * names); `index.html` is never cached. Every answer carries a strict
 * Content-Security-Policy: scripts, styles and connections to the hub's own
 * origin only, no inline code, no frames.
 */
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { getAsset, isSea } from 'node:sea';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** The SEA asset (and the file under lib/) that holds the pack. */
export const WEB_ASSETS_PACK = 'web-assets.json';

/** One file of the pack as the build writes it. */
interface PackedFile {
  type: string;
  /** The bytes, base64. */
  body: string;
  /** Whether its name carries its content hash (cached for good). */
  immutable: boolean;
}

/** A file ready to serve. */
interface WebAsset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
  etag: string;
  immutable: boolean;
}

/** The policy on every answer under /ui/. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers every web view answer carries, the JSON API's included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** The pack's path outside the single binary: lib/ beside src/ (this file is src/hub/web/ or lib/hub/web/). */
function packPath(): string {
  return fileURLToPath(new URL(`../../../lib/${WEB_ASSETS_PACK}`, import.meta.url));
}

function readPack(): string | undefined {
  try {
    return isSea() ? getAsset(WEB_ASSETS_PACK, 'utf8') : readFileSync(packPath(), 'utf8');
  } catch {
    return undefined;
  }
}

/** The web view's files by path under /ui/ (`index.html`, `assets/main-HASH.js`, …). */
export class WebAssets {
  readonly #files = new Map<string, WebAsset>();

  private constructor(files: Record<string, PackedFile>) {
    for (const [path, file] of Object.entries(files)) {
      const body = Buffer.from(file.body, 'base64');
      this.#files.set(path, {
        type: file.type,
        body,
        gzipped: gzipSync(body, { level: 9 }),
        etag: `"${file.immutable ? path.replace(/.*-/, '').replace(/\..*/, '') : body.length.toString(16)}"`,
        immutable: file.immutable,
      });
    }
  }

  /** The built pack, or undefined when this edgeadm was built without it. */
  static load(): WebAssets | undefined {
    const text = readPack();
    if (text === undefined) return undefined;
    const pack = JSON.parse(text) as { files: Record<string, PackedFile> };
    return new WebAssets(pack.files);
  }

  /** Whether a path is one of the files. */
  has(path: string): boolean {
    return this.#files.has(path);
  }

  /** Sends one file (gzipped when the browser accepts it); false when there is no such file. */
  send(res: ServerResponse, path: string, acceptEncoding: string | undefined, method: string): boolean {
    const asset = this.#files.get(path);
    if (asset === undefined) return false;
    const isGzip = /\bgzip\b/.test(acceptEncoding ?? '');
    const body = isGzip ? asset.gzipped : asset.body;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': asset.type,
      'content-length': body.length,
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      etag: asset.etag,
      vary: 'accept-encoding',
      ...(isGzip ? { 'content-encoding': 'gzip' } : {}),
    });
    res.end(method === 'HEAD' ? undefined : body);
    return true;
  }
}
