/**
 * OpenSSH known_hosts files: parsing, matching a host's key, fingerprints,
 * and recording a newly trusted key.
 *
 * Supported, as in sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT": comma-separated
 * host patterns with `*`, `?` and `!` negation; `[host]:port` names for
 * non-default ports; hashed names (`|1|base64(salt)|base64(HMAC-SHA1(salt,
 * name))`, as written with HashKnownHosts); and the `@revoked` marker.
 * `@cert-authority` lines are skipped: edgeadm does not accept host
 * certificates, so such a host shows up as unknown, never as trusted.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DEFAULT_SSH_PORT } from './ssh-target.js';

/** One key line of a known_hosts file. */
export interface KnownHostEntry {
  /** 1-based, for messages ("known_hosts:12"). */
  lineNumber: number;
  marker: 'revoked' | 'cert-authority' | undefined;
  /** The host field as written: patterns, or one hashed name. */
  hosts: string;
  /** Key type from the line (`ssh-ed25519`). */
  keyType: string;
  keyBlob: Buffer;
}

/** The outcome of checking a presented host key against known_hosts. */
export type KnownHostsVerdict =
  /** A line for this host holds this key. */
  | { status: 'known'; entry: KnownHostEntry }
  /** Lines for this host exist, none with this key: possibly a man-in-the-middle. */
  | { status: 'mismatch'; entries: KnownHostEntry[] }
  /** The key is marked @revoked. */
  | { status: 'revoked'; entry: KnownHostEntry }
  /** Nothing is known about this host. */
  | { status: 'unknown' };

const HASHED_PREFIX = '|1|';
/** Length of the salt OpenSSH uses for hashed names (the size of a SHA-1 HMAC key block it picks). */
const HASH_SALT_BYTES = 20;

/** Parses a known_hosts file, skipping comments, blank and malformed lines. */
export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    let marker: KnownHostEntry['marker'];
    if (fields[0]?.startsWith('@')) {
      const name = fields.shift()!.slice(1);
      if (name !== 'revoked' && name !== 'cert-authority') return;
      marker = name;
    }
    const [hosts, keyType, keyBase64] = fields;
    if (hosts === undefined || keyType === undefined || keyBase64 === undefined) return;
    const keyBlob = Buffer.from(keyBase64, 'base64');
    if (keyBlob.length === 0) return;
    entries.push({ lineNumber: index + 1, marker, hosts, keyType, keyBlob });
  });
  return entries;
}

/** The name a host is looked up by: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number = DEFAULT_SSH_PORT): string {
  const lower = host.toLowerCase();
  return port === DEFAULT_SSH_PORT ? lower : `[${lower}]:${port}`;
}

/** Whether a known_hosts line's host field matches a lookup name. */
export function entryMatchesName(hosts: string, name: string): boolean {
  if (hosts.startsWith(HASHED_PREFIX)) {
    const [, , salt, hash] = hosts.split('|');
    if (salt === undefined || hash === undefined) return false;
    const expected = Buffer.from(hash, 'base64');
    const actual = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest();
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }
  let isMatched = false;
  for (const pattern of hosts.split(',')) {
    const isNegated = pattern.startsWith('!');
    if (!wildcardMatches(isNegated ? pattern.slice(1) : pattern, name)) continue;
    // A matching negated pattern rules the line out, whatever else matches.
    if (isNegated) return false;
    isMatched = true;
  }
  return isMatched;
}

/** `*` and `?` wildcard matching, case-insensitive, over the whole string. */
export function wildcardMatches(pattern: string, text: string): boolean {
  const source = pattern
    .toLowerCase()
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`).test(text.toLowerCase());
}

/** Checks the key a host presented against the parsed file. */
export function checkKnownHost(
  entries: KnownHostEntry[],
  target: { host: string; port: number; keyBlob: Buffer },
): KnownHostsVerdict {
  const name = knownHostsName(target.host, target.port);
  const forHost = entries.filter((entry) => entry.marker !== 'cert-authority' && entryMatchesName(entry.hosts, name));
  const revoked = entries.find((entry) => entry.marker === 'revoked' && entry.keyBlob.equals(target.keyBlob));
  if (revoked) return { status: 'revoked', entry: revoked };
  const match = forHost.find((entry) => entry.marker === undefined && entry.keyBlob.equals(target.keyBlob));
  if (match) return { status: 'known', entry: match };
  const others = forHost.filter((entry) => entry.marker === undefined);
  return others.length > 0 ? { status: 'mismatch', entries: others } : { status: 'unknown' };
}

/** Key types known for a host, so the connection can ask for one of those first (as OpenSSH does). */
export function knownKeyTypes(entries: KnownHostEntry[], host: string, port: number): string[] {
  const name = knownHostsName(host, port);
  const types = entries
    .filter((entry) => entry.marker === undefined && entryMatchesName(entry.hosts, name))
    .map((entry) => entry.keyType);
  return [...new Set(types)];
}

/** OpenSSH's fingerprint form: `SHA256:` and the unpadded base64 SHA-256 of the key blob. */
export function fingerprintSha256(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** Normalizes a fingerprint the user typed (`SHA256:abc=` or `abc`) to {@link fingerprintSha256}'s form. */
export function normalizeFingerprint(text: string): string | undefined {
  const body = text
    .trim()
    .replace(/^SHA256:/i, '')
    .replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]{43}$/.test(body)) return undefined;
  return `SHA256:${body}`;
}

/** The key type named inside an SSH public key blob (its first string). */
export function keyTypeOfBlob(keyBlob: Buffer): string {
  if (keyBlob.length < 4) return 'unknown';
  const length = keyBlob.readUInt32BE(0);
  if (length > keyBlob.length - 4 || length > 64) return 'unknown';
  return keyBlob.subarray(4, 4 + length).toString('latin1');
}

/** A hashed host field for `name`: `|1|salt|hash`. */
export function hashKnownHostsName(name: string, salt: Buffer = randomBytes(HASH_SALT_BYTES)): string {
  const hash = createHmac('sha1', salt).update(name).digest('base64');
  return `${HASHED_PREFIX}${salt.toString('base64')}|${hash}`;
}

/** One known_hosts line for a host's key. */
export function formatKnownHostsLine(
  target: { host: string; port: number; keyBlob: Buffer },
  options: { isHashed?: boolean } = {},
): string {
  const name = knownHostsName(target.host, target.port);
  const hosts = options.isHashed ? hashKnownHostsName(name) : name;
  return `${hosts} ${keyTypeOfBlob(target.keyBlob)} ${target.keyBlob.toString('base64')}`;
}

/** Reads and parses a known_hosts file; a missing file is empty. */
export async function readKnownHostsFile(file: string): Promise<KnownHostEntry[]> {
  try {
    return parseKnownHosts(await readFile(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** Appends one line, creating the file (0600) and its directory (0700) when missing. */
export async function appendKnownHostsLine(file: string, line: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  let existing = '';
  try {
    existing = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const separator = existing === '' || existing.endsWith('\n') ? '' : '\n';
  await appendFile(file, `${separator}${line}\n`, { mode: 0o600 });
}
