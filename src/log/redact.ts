/**
 * Redaction of secrets before anything reaches a log, the terminal or a report.
 *
 * Two mechanisms work together:
 * - shapes that are secret wherever they appear (bootstrap tokens, k3s tokens,
 *   PEM private keys, bearer and basic credentials, kubeconfig key material,
 *   `password=…`-style assignments and `--token …`-style flags);
 * - literal values registered at run time (a sudo password typed at a prompt,
 *   a passphrase read from a file), replaced wherever they appear.
 */

/** What a secret is replaced with. */
export const REDACTED = '<redacted>';

/** Literal secrets shorter than this are not registered: they would mangle ordinary text. */
export const MIN_LITERAL_SECRET_LENGTH = 4;

/** Names (of flags, keys and variables) whose values are secret. */
const SECRET_NAME = String.raw`[A-Za-z0-9_-]*(?:password|passwd|passphrase|secret|token|private[-_]?key|key[-_]?data|api[-_]?key|certificate[-_]?key)`;

const SECRET_KEY = new RegExp(String.raw`^${SECRET_NAME}$`, 'i');

interface Rule {
  pattern: RegExp;
  replace: (match: string, ...groups: string[]) => string;
}

const RULES: Rule[] = [
  // PEM private keys of any kind (RSA, EC, PKCS#8, OpenSSH, encrypted).
  {
    pattern: /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
    replace: (_m, kind: string) => `-----BEGIN ${kind}PRIVATE KEY----- ${REDACTED}`,
  },
  // k3s join tokens: K10<ca-hash>::<credentials>.
  { pattern: /\bK10[0-9a-f]{0,64}::\S+/g, replace: () => `K10${REDACTED}` },
  // Credentials in a URL's user information (proxy URLs: http://user:pass@host).
  {
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]*@/gi,
    replace: (_m, scheme: string) => `${scheme}${REDACTED}@`,
  },
  // HTTP credentials.
  { pattern: /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, replace: (_m, scheme: string) => `${scheme} ${REDACTED}` },
  // Bootstrap tokens (<id>.<secret>): the id is not secret and helps find the token.
  { pattern: /\b([a-z0-9]{6})\.[a-z0-9]{16}\b/g, replace: (_m, id: string) => `${id}.${REDACTED}` },
  // --flag value and --flag=value for secret-named flags.
  {
    pattern: new RegExp(String.raw`(--${SECRET_NAME})(=|\s+)(?!--)("[^"]*"|'[^']*'|\S+)`, 'gi'),
    replace: (_m, flag: string, sep: string) => `${flag}${sep}${REDACTED}`,
  },
  // YAML / JSON / env style assignments: token: x, "password": "x", PASSWORD=x.
  // A name that ends a path (`/etc/passwd: not gzip`) is a file, not a key.
  // An unquoted name needs a space after its colon, as YAML does: a colon
  // with none joins words (`hub:token:create`, a command id), it assigns nothing.
  {
    pattern: new RegExp(
      String.raw`((?:["']${SECRET_NAME}["']\s*[:=]|(?<![/.\\])\b${SECRET_NAME}\s*(?:=|:(?=\s)))\s*)("[^"]*"|'[^']*'|[^\s,}]+)`,
      'gi',
    ),
    replace: (_m, lhs: string, value: string) => {
      const quote = value.startsWith('"') || value.startsWith("'") ? value[0] : '';
      return `${lhs}${quote}${REDACTED}${quote}`;
    },
  },
];

/** Replaces secrets in text. Holds the literal secrets registered so far. */
export class Redactor {
  readonly #literals = new Set<string>();

  /** Registers a value that must never appear in output, wherever it shows up. */
  addSecret(value: string | undefined): void {
    if (value !== undefined && value.length >= MIN_LITERAL_SECRET_LENGTH) this.#literals.add(value);
  }

  /** Returns `text` with every known secret shape and registered value replaced. */
  redact(text: string): string {
    let out = text;
    // Shapes first: they keep what is not secret (a token's id) and mark the rest.
    for (const rule of RULES) {
      out = out.replace(rule.pattern, rule.replace as (substring: string, ...args: unknown[]) => string);
    }
    // Then literals, longest first, so that a secret containing another is replaced whole.
    for (const literal of [...this.#literals].sort((a, b) => b.length - a.length)) {
      out = out.split(literal).join(REDACTED);
    }
    return out;
  }

  /** Redacts every string inside a JSON-like value, and every value under a secret-named key, returning a copy. */
  redactValue<T>(value: T): T {
    return this.#walk(value) as T;
  }

  #walk(value: unknown): unknown {
    if (typeof value === 'string') return this.redact(value);
    if (Array.isArray(value)) return value.map((item) => this.#walk(item));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [
          key,
          SECRET_KEY.test(key) && (typeof item === 'string' || typeof item === 'number') ? REDACTED : this.#walk(item),
        ]),
      );
    }
    return value;
  }
}
