/**
 * What the web view's tests share: the view's pack built when missing or
 * older than web/ (as cli-build.ts does for lib/), the Debian chromium that
 * playwright-core drives (never a downloaded browser), HTTPS calls to the
 * view's API with a session cookie, and a directory for screenshots that
 * outlives the test run's temporary directory.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { REPO_ROOT } from './cli.js';

/** Debian's chromium (the `chromium` package; `.ci/run` installs it). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newestMtime(join(path, entry))));
}

/** Builds lib/web-assets.json when it is missing or older than web/. */
export function ensureWebBuilt(): void {
  const pack = join(REPO_ROOT, 'lib', 'web-assets.json');
  if (existsSync(pack) && statSync(pack).mtimeMs >= newestMtime(join(REPO_ROOT, 'web'))) return;
  execFileSync(process.execPath, [join(REPO_ROOT, 'scripts/build-web.js')], { cwd: REPO_ROOT, stdio: 'pipe' });
}

/** Headless chromium, as root needs it (no sandbox). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox'] });
}

/**
 * A directory for screenshots: beside the test run's temporary directory
 * (which the run removes at its end), so that a person can look at them
 * afterwards. Its path is printed by the suites that write to it.
 */
export function screenshotDir(name: string): string {
  const dir = join(dirname(tmpdir()), `edgeadm-web-screenshots-${name}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** An answer of the view's API. */
export interface WebAnswer {
  status: number;
  json: Record<string, unknown>;
  setCookie: string[];
}

/** One HTTPS request to a hub on loopback, trusting its CA. */
export function webRequest(options: {
  port: number;
  dataDir: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
}): Promise<WebAnswer> {
  const ca = readFileSync(join(options.dataDir, 'pki', 'ca.crt'), 'utf8');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port,
        path: options.path,
        method: options.method ?? 'GET',
        ca,
        agent: false,
        headers: options.headers ?? {},
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => {
          let json: Record<string, unknown>;
          try {
            json = body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
          } catch {
            json = { text: body };
          }
          resolve({ status: res.statusCode ?? 0, json, setCookie: res.headers['set-cookie'] ?? [] });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A signed-in session for direct API calls: its cookie and CSRF token. */
export interface ApiSession {
  cookie: string;
  csrfToken: string;
}

/** Signs in with a bearer token as the page does (same-origin POST). */
export async function signInDirect(hub: { port: number; dataDir: string }, token: string): Promise<ApiSession> {
  const answer = await webRequest({
    ...hub,
    path: '/ui/api/session',
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      origin: `https://127.0.0.1:${hub.port}`,
      'sec-fetch-site': 'same-origin',
    },
  });
  if (answer.status !== 201) throw new Error(`sign-in failed: ${answer.status} ${JSON.stringify(answer.json)}`);
  const cookie = (answer.setCookie[0] ?? '').split(';')[0] ?? '';
  return { cookie, csrfToken: String(answer.json.csrfToken) };
}

/** The token in a hub config file. */
export function tokenOf(hubConfigPath: string): string {
  return /^token: (\S+)$/m.exec(readFileSync(hubConfigPath, 'utf8'))?.[1] ?? '';
}
