/**
 * The values of an Ansible INI inventory, read as Ansible reads them: each
 * `key=value` value goes through Python's `ast.literal_eval`, and text that
 * is not a Python literal stays text (plugins/inventory/ini.py,
 * `_parse_value`). So `ansible_port=2222` is a number, `ansible_port=02222`
 * is the text "02222" (Python 3 has no leading-zero integers), `x=0x10` is 16,
 * `x=True` a boolean, `x="a b"` (quotes removed by the line's shell-like
 * split) the text `a b`, and `x={'a': 1}` a mapping.
 *
 * Pure: no I/O. Covers the literals an inventory holds: numbers, strings,
 * True/False/None, lists, tuples and dicts. Anything else (sets, complex
 * numbers, bytes) is kept as the text it was, as a failed literal_eval does.
 */

/** What a literal evaluates to, or the text itself when it is not a literal. */
export function pythonLiteral(text: string): unknown {
  const parser = new LiteralParser(text.replace(/^[ \t]+/, ''));
  try {
    const value = parser.value();
    parser.skipSpace();
    return parser.isAtEnd() ? value : text;
  } catch (error) {
    if (error instanceof NotALiteral) return text;
    throw error;
  }
}

class NotALiteral extends Error {}

const INTEGER = /^(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|[1-9](?:_?\d)*|0(?:_?0)*)(?![\w.])/;
const DIGITS = String.raw`\d(?:_?\d)*`;
const FLOAT = new RegExp(
  String.raw`^(?:(?:${DIGITS})?\.${DIGITS}(?:[eE][+-]?${DIGITS})?|${DIGITS}\.(?:[eE][+-]?${DIGITS})?|${DIGITS}[eE][+-]?${DIGITS})(?![\w.])`,
);

class LiteralParser {
  private index = 0;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  isAtEnd(): boolean {
    return this.index >= this.text.length;
  }

  skipSpace(): void {
    while (this.index < this.text.length && /\s/.test(this.text[this.index]!)) this.index++;
  }

  value(): unknown {
    this.skipSpace();
    const rest = this.text.slice(this.index);
    const char = rest[0];
    if (char === undefined) throw new NotALiteral();
    if (char === '[') return this.sequence('[', ']');
    if (char === '(') return this.tuple();
    if (char === '{') return this.dict();
    if (/^[rRuU]?['"]/.test(rest)) return this.strings();
    const word = /^(True|False|None)(?!\w)/.exec(rest);
    if (word) {
      this.index += word[1]!.length;
      return word[1] === 'True' ? true : word[1] === 'False' ? false : null;
    }
    if (char === '-' || char === '+') {
      this.index++;
      const operand = this.value();
      if (typeof operand !== 'number') throw new NotALiteral();
      return char === '-' ? -operand : operand;
    }
    const float = FLOAT.exec(rest);
    if (float) {
      this.index += float[0].length;
      return Number(float[0].replaceAll('_', ''));
    }
    const integer = INTEGER.exec(rest);
    if (integer) {
      this.index += integer[0].length;
      const digits = integer[0].replaceAll('_', '');
      return Number(/^0[oO]/.test(digits) ? Number.parseInt(digits.slice(2), 8) : digits);
    }
    throw new NotALiteral();
  }

  private expect(char: string): void {
    this.skipSpace();
    if (this.text[this.index] !== char) throw new NotALiteral();
    this.index++;
  }

  private peek(char: string): boolean {
    this.skipSpace();
    return this.text[this.index] === char;
  }

  private sequence(open: string, close: string): unknown[] {
    this.expect(open);
    const items: unknown[] = [];
    while (!this.peek(close)) {
      items.push(this.value());
      if (this.peek(',')) this.expect(',');
      else break;
    }
    this.expect(close);
    return items;
  }

  private tuple(): unknown {
    // `(1)` is 1; `(1,)` and `()` are tuples (lists once serialised).
    this.expect('(');
    if (this.peek(')')) {
      this.expect(')');
      return [];
    }
    const first = this.value();
    if (this.peek(')')) {
      this.expect(')');
      return first;
    }
    const items = [first];
    while (this.peek(',')) {
      this.expect(',');
      if (this.peek(')')) break;
      items.push(this.value());
    }
    this.expect(')');
    return items;
  }

  private dict(): Record<string, unknown> {
    this.expect('{');
    const result: Record<string, unknown> = {};
    while (!this.peek('}')) {
      const key = this.value();
      if (typeof key === 'object' && key !== null) throw new NotALiteral();
      this.expect(':');
      result[String(key)] = this.value();
      if (this.peek(',')) this.expect(',');
      else break;
    }
    this.expect('}');
    return result;
  }

  /** One or more adjacent string literals, concatenated as Python does. */
  private strings(): string {
    let result = '';
    do {
      result += this.string();
      this.skipSpace();
    } while (/^[rRuU]?['"]/.test(this.text.slice(this.index)));
    return result;
  }

  private string(): string {
    let isRaw = false;
    if (/[rRuU]/.test(this.text[this.index]!)) {
      isRaw = /[rR]/.test(this.text[this.index]!);
      this.index++;
    }
    const triple = this.text.slice(this.index, this.index + 3);
    const quote = triple === "'''" || triple === '"""' ? triple : this.text[this.index]!;
    this.index += quote.length;
    let result = '';
    for (;;) {
      if (this.index >= this.text.length) throw new NotALiteral();
      if (this.text.startsWith(quote, this.index)) {
        this.index += quote.length;
        return result;
      }
      const char = this.text[this.index]!;
      if (char === '\n' && quote.length === 1) throw new NotALiteral();
      if (char === '\\' && this.index + 1 < this.text.length) {
        const next = this.text[this.index + 1]!;
        this.index += 2;
        if (isRaw) {
          result += `\\${next}`;
          continue;
        }
        const simple: Record<string, string> = {
          n: '\n',
          t: '\t',
          r: '\r',
          '\\': '\\',
          "'": "'",
          '"': '"',
          '0': '\0',
          a: '\x07',
          b: '\b',
          f: '\f',
          v: '\v',
          '\n': '',
        };
        const escaped = simple[next];
        if (escaped !== undefined) result += escaped;
        else if (next === 'x' && /^[0-9a-fA-F]{2}/.test(this.text.slice(this.index))) {
          result += String.fromCharCode(Number.parseInt(this.text.slice(this.index, this.index + 2), 16));
          this.index += 2;
        } else result += `\\${next}`;
        continue;
      }
      result += char;
      this.index++;
    }
  }
}
