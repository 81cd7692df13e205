/**
 * Commands named in markdown: `edgeadm …` in code (fenced blocks and inline
 * code), and inline code that starts with a topic (`hub serve`, `fleet up`).
 * Pure: text in, mentions out.
 */

/** A command named in a page: the words that follow `edgeadm`, up to the first flag or argument that is not a plain word. */
export interface CommandMention {
  words: string[];
  text: string;
  line: number;
}

const WORD = /^[a-z][a-z0-9-]*$/;
/** The top-level topics that are not commands themselves: inline code starting with one names a command. */
const TOPIC_ROOTS = new Set(['agent', 'certs', 'config', 'fleet', 'host', 'hub', 'package', 'token', 'upgrade']);

/** The commands `markdown` names, in order. */
export function commandMentions(markdown: string): CommandMention[] {
  const mentions: CommandMention[] = [];
  let isFenced = false;
  markdown.split('\n').forEach((line, index) => {
    if (line.trimStart().startsWith('```')) {
      isFenced = !isFenced;
      return;
    }
    // In a code block a shell comment is prose (`# as root: edgeadm put against scp`), unless it shows what a command prints.
    const code = isFenced
      ? [line.replace(/(?:^|\s)#(?! prints:).*$/, '')]
      : [...line.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
    for (const span of code) {
      for (const match of span.matchAll(/(?:^|[\s$;|&(/])edgeadm((?: +\S+)*)/g)) {
        mentions.push(mention(['edgeadm', ...match[1]!.trim().split(/ +/)], index + 1));
      }
      const first = span.split(' ')[0]!;
      if (!isFenced && TOPIC_ROOTS.has(first)) mentions.push(mention([...span.split(/ +/)], index + 1, false));
    }
  });
  return mentions;
}

function mention(tokens: string[], line: number, isPrefixed = true): CommandMention {
  const start = isPrefixed ? 1 : 0;
  const words: string[] = [];
  for (const token of tokens.slice(start)) {
    if (!WORD.test(token)) break;
    words.push(token);
  }
  return { words, line, text: [...(isPrefixed ? ['edgeadm'] : []), ...words].join(' ') };
}

/** Whether `words` name a command of `commands` (oclif ids), or a topic of them. */
export function isKnownCommand(
  words: readonly string[],
  commands: Record<string, { args?: Record<string, unknown>; strict?: boolean }>,
): boolean {
  if (words.length === 0) return true;
  // `edgeadm help init` is `edgeadm init --help` (src/cli/main.ts).
  if (words[0] === 'help') return isKnownCommand(words.slice(1), commands);
  for (let k = words.length; k >= 1; k--) {
    const id = words.slice(0, k).join(':');
    const command = commands[id];
    if (command === undefined) continue;
    // A plain word after a command that takes no argument is a misspelt subcommand.
    const takesArgs = Object.keys(command.args ?? {}).length > 0 || command.strict === false;
    return k === words.length || takesArgs;
  }
  const topic = `${words.join(':')}:`;
  return Object.keys(commands).some((id) => id.startsWith(topic));
}

/** The mentions in `markdown` of commands that `commands` does not have. */
export function unknownCommandMentions(
  markdown: string,
  commands: Record<string, { args?: Record<string, unknown>; strict?: boolean }>,
): CommandMention[] {
  return commandMentions(markdown).filter((mention) => !isKnownCommand(mention.words, commands));
}
