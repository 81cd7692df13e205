/**
 * Where a package comes from: `--install-pkg-path` takes a local file or an
 * http(s) URL.
 *
 * A URL is downloaded by edgeadm itself, on the machine where it runs (hosts
 * at the edge have no internet; edgeadm pushes the package to them). The
 * download goes to a temporary file in the cache directory, bounded in size
 * and guarded by timeouts, and is verified before it is renamed into the
 * cache. Either way the caller gets a {@link VerifiedPackage}: nothing uses
 * a package that was not verified, and callers need no second pass.
 *
 * Verification proves that a package is intact and safe to unpack; who made
 * it is checked only against the keys in `trust` (signature.ts), and the
 * result's `signer` says whether it was. `expectedSha256` pins the exact file; with a pin, a cached copy
 * with that checksum is reused without downloading again.
 *
 * URLs are shown without their user info and query string, which often carry
 * credentials or signatures.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ValidationError } from '../errors.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import { downloadError, isPackageError, PackageError, PackageErrorCode } from './errors.js';
import { MAX_PACKAGE_DOWNLOAD_BYTES, type PackageLimits } from './limits.js';
import type { PackageTrust } from './signature.js';
import { verifyPackage, type VerifiedPackage } from './verify.js';
import { formatMiB } from './inspect.js';

/** How long to wait for the server to answer (status and headers). */
export const DOWNLOAD_RESPONSE_TIMEOUT_MS = 30_000;
/** How long a download may go without receiving a byte before it is abandoned. */
export const DOWNLOAD_IDLE_TIMEOUT_MS = 60_000;

/** Progress of a download, reported after each chunk. */
export interface DownloadProgress {
  receivedBytes: number;
  /** From Content-Length, when the server sends it. */
  totalBytes: number | undefined;
}

/** Options of {@link resolvePackageSource}. */
export interface ResolvePackageSourceOptions {
  /** Where downloaded packages are kept (created if missing). */
  cacheDir: string;
  /** SHA-256 the package file must have (hex, optionally prefixed `sha256:`). */
  expectedSha256?: string;
  /** Overrides of the verification limits. */
  limits?: Partial<PackageLimits>;
  /** The keys that may have signed the package; none pinned when absent. */
  trust?: PackageTrust;
  /** Largest download, bytes; defaults to {@link MAX_PACKAGE_DOWNLOAD_BYTES}. */
  maxDownloadBytes?: number;
  /** Defaults to {@link DOWNLOAD_RESPONSE_TIMEOUT_MS}. */
  responseTimeoutMs?: number;
  /** Defaults to {@link DOWNLOAD_IDLE_TIMEOUT_MS}. */
  idleTimeoutMs?: number;
  onProgress?: (progress: DownloadProgress) => void;
  logger?: Logger;
  signal?: AbortSignal;
}

/** Where a resolved package came from. */
export type PackageOrigin = { kind: 'file' } | { kind: 'url'; url: string; downloaded: boolean };

/** A verified package, ready to use, and where it came from. */
export interface ResolvedPackage extends VerifiedPackage {
  origin: PackageOrigin;
}

/** Resolves `--install-pkg-path`: a local file as it is, or an http(s) URL downloaded into the cache; verified either way. */
export async function resolvePackageSource(
  pathOrUrl: string,
  options: ResolvePackageSourceOptions,
): Promise<ResolvedPackage> {
  const expectedSha256 = normalizeSha256(options.expectedSha256);
  const url = parseUrl(pathOrUrl);
  if (url === undefined) {
    const verified = await verifyPackage(pathOrUrl, { limits: options.limits ?? {}, ...trustOf(options) });
    checkPin(verified, expectedSha256, pathOrUrl);
    return { ...verified, origin: { kind: 'file' } };
  }
  return resolveUrl(url, expectedSha256, options);
}

/** A URL without user info, query or fragment: safe to print and log. */
export function displayUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

async function resolveUrl(
  url: URL,
  expectedSha256: string | undefined,
  options: ResolvePackageSourceOptions,
): Promise<ResolvedPackage> {
  const logger = options.logger ?? silentLogger;
  const shown = displayUrl(url);
  await mkdir(options.cacheDir, { recursive: true });
  const cached = join(options.cacheDir, cacheFileName(url));
  const limits = options.limits ?? {};

  if (expectedSha256 !== undefined && (await isFile(cached))) {
    try {
      const verified = await verifyPackage(cached, { limits, label: shown, ...trustOf(options) });
      if (verified.archiveSha256 === expectedSha256) {
        logger.info(`using cached package ${cached} for ${shown} (sha256 ${expectedSha256})`);
        return { ...verified, file: cached, origin: { kind: 'url', url: shown, downloaded: false } };
      }
    } catch (error) {
      if (!isPackageError(error)) throw error;
    }
    logger.info(`cached package ${cached} does not match the expected sha256; downloading again`);
  }

  const temporary = `${cached}.${randomBytes(6).toString('hex')}.partial`;
  try {
    logger.info(`downloading ${shown} to ${cached}`);
    const download = await downloadTo(url, temporary, options);
    logger.info(`downloaded ${formatMiB(download.bytes)} from ${shown}`);
    let verified: VerifiedPackage;
    try {
      verified = await verifyPackage(temporary, { limits, label: shown, ...trustOf(options) });
    } catch (error) {
      if (isPackageError(error) && download.contentType?.startsWith('text/')) {
        throw new PackageError(
          error.code,
          `${error.message} (the server sent ${download.contentType}, not a package)`,
          {
            ...(error.entry === undefined ? {} : { entry: error.entry }),
            details: error.details ?? {},
            hints: ['Check the URL: it should point at the .tar.gz file itself, not a web page about it.'],
            cause: error,
          },
        );
      }
      throw error;
    }
    checkPin(verified, expectedSha256, shown);
    await rename(temporary, cached);
    return { ...verified, file: cached, origin: { kind: 'url', url: shown, downloaded: true } };
  } finally {
    await rm(temporary, { force: true });
  }
}

/** Streams the body of `url` into `file` (created exclusively), with the size bound and both timeouts. */
async function downloadTo(
  url: URL,
  file: string,
  options: ResolvePackageSourceOptions,
): Promise<{ bytes: number; contentType: string | undefined }> {
  const shown = displayUrl(url);
  const maxBytes = options.maxDownloadBytes ?? MAX_PACKAGE_DOWNLOAD_BYTES;
  const controller = new AbortController();
  const abortFromCaller = () => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', abortFromCaller, { once: true });
  let stalled: 'response' | 'body' | undefined;
  let timer = setTimeout(() => {
    stalled = 'response';
    controller.abort();
  }, options.responseTimeoutMs ?? DOWNLOAD_RESPONSE_TIMEOUT_MS);
  const idleTimeoutMs = options.idleTimeoutMs ?? DOWNLOAD_IDLE_TIMEOUT_MS;
  const armIdleTimer = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = 'body';
      controller.abort();
    }, idleTimeoutMs);
  };

  const failure = (error: unknown) => {
    if (stalled === 'response') {
      return downloadError(
        `${shown} did not answer within ${(options.responseTimeoutMs ?? DOWNLOAD_RESPONSE_TIMEOUT_MS) / 1000}s`,
        {
          url: shown,
          cause: error,
        },
      );
    }
    if (stalled === 'body') {
      return downloadError(`the download from ${shown} stalled: no data for ${idleTimeoutMs / 1000}s`, {
        url: shown,
        cause: error,
      });
    }
    return downloadError(`cannot download ${shown}: ${describeFetchError(error)}`, { url: shown, cause: error });
  };

  try {
    let response: Response;
    try {
      response = await fetch(url, { signal: controller.signal, redirect: 'follow' });
    } catch (error) {
      throw failure(error);
    }
    if (response.status === 404 || response.status === 410) {
      throw new PackageError(
        PackageErrorCode.NotFound,
        `${shown} returned HTTP ${response.status} ${response.statusText}`.trim(),
        {
          details: { url: shown, status: response.status },
        },
      );
    }
    if (!response.ok || response.body === null) {
      throw downloadError(`${shown} returned HTTP ${response.status} ${response.statusText}`.trim(), { url: shown });
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    const totalBytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined;
    if (totalBytes !== undefined && totalBytes > maxBytes) {
      await response.body.cancel();
      throw tooLarge(shown, totalBytes, maxBytes);
    }
    const contentType = response.headers.get('content-type') ?? undefined;

    armIdleTimer();
    const handle = await open(file, 'wx', 0o644);
    let received = 0;
    try {
      for await (const chunk of response.body) {
        armIdleTimer();
        received += chunk.length;
        if (received > maxBytes) throw tooLarge(shown, received, maxBytes);
        let offset = 0;
        while (offset < chunk.length) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
        options.onProgress?.({ receivedBytes: received, totalBytes });
      }
      await handle.sync();
    } catch (error) {
      if (error instanceof PackageError) throw error;
      throw failure(error);
    } finally {
      await handle.close();
    }
    return { bytes: received, contentType };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', abortFromCaller);
  }
}

function trustOf(options: ResolvePackageSourceOptions): { trust?: PackageTrust } {
  return options.trust === undefined ? {} : { trust: options.trust };
}

function parseUrl(source: string): URL | undefined {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(source)) return undefined;
  const url = URL.canParse(source) ? new URL(source) : undefined;
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ValidationError(`package source ${source.replace(/[?#].*$/, '')} is not a file path or an http(s) URL`, {
      code: 'E_PACKAGE_URL',
      hints: ['Give a local .tar.gz file or an http:// or https:// URL.'],
    });
  }
  return url;
}

/** `<16 hex of the URL's SHA-256>-<file name from the URL>`: distinct per URL, recognisable to people. */
function cacheFileName(url: URL): string {
  const digest = createHash('sha256').update(url.href).digest('hex').slice(0, 16);
  const last = decodeURIComponentSafe(url.pathname.split('/').pop() ?? '').replace(/[^A-Za-z0-9._+-]/g, '_');
  return `${digest}-${last === '' || last.startsWith('.') ? 'package.tar.gz' : last}`;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function normalizeSha256(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const hex = value.replace(/^sha256:/i, '').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new ValidationError(`expected package checksum ${value} is not a SHA-256 (64 hex digits)`, {
      code: 'E_PACKAGE_OPTIONS',
    });
  }
  return hex;
}

function checkPin(verified: VerifiedPackage, expectedSha256: string | undefined, shown: string): void {
  if (expectedSha256 === undefined || verified.archiveSha256 === expectedSha256) return;
  throw new PackageError(
    PackageErrorCode.Checksum,
    `package ${shown} has SHA-256 ${verified.archiveSha256}; expected ${expectedSha256}`,
    {
      details: { sha256: verified.archiveSha256, expectedSha256 },
      hints: ['The package is not the one that was pinned. Check the URL or the expected checksum.'],
    },
  );
}

function tooLarge(shown: string, bytes: number, limit: number): PackageError {
  return new PackageError(
    PackageErrorCode.TooLarge,
    `${shown} is ${bytes} bytes or more; the download limit is ${limit}`,
    {
      details: { url: shown, limit },
    },
  );
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** fetch() wraps network errors as "fetch failed"; the cause says what happened (ECONNREFUSED, ENOTFOUND, a TLS error). */
function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code && cause.message) return `${cause.message} (${cause.code})`;
  if (cause?.message) return cause.message;
  return (error as Error).message ?? String(error);
}
