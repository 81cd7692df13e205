/** An ssh config environment over in-memory files, for the resolver's unit tests. */
import type { SshConfigEnvironment } from '../../../src/hosts/ssh-config.js';

/** `files` by absolute path; globs match `*` within one path component. */
export function memoryEnvironment(files: Record<string, string> = {}): SshConfigEnvironment {
  return {
    homeDir: '/home/ops',
    localUser: 'ops',
    localUid: 1000,
    localHostName: 'laptop.example.com',
    readFile: (path) => files[path],
    glob: (pattern) => {
      const source = pattern
        .replace(/[.+^${}()|\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]');
      return Object.keys(files)
        .filter((path) => new RegExp(`^${source}$`).test(path))
        .sort();
    },
    servicePort: (name) => ({ ssh: 22, http: 80 })[name],
  };
}
