// The command reference, docs/reference/commands.md, made from
// oclif.manifest.json (what --help is rendered from), so it cannot drift.
// `npm run build` writes it; test/unit/docs/command-reference.test.ts fails
// when the file is stale or when README.md or docs/guides name a command
// the manifest does not have.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The flags every command takes, listed once at the top instead of per command. */
const GLOBAL_FLAGS = new Set(['json', 'verbose', 'log-file']);

/** `hub:token:create` as it is typed: `hub token create`. */
export function typedId(id) {
  return id.replaceAll(':', ' ');
}

/** The markdown reference for every visible command of `manifest`, sorted by id. */
export function renderCommandReference(manifest) {
  const commands = Object.values(manifest.commands)
    .filter((command) => !command.hidden)
    .sort((a, b) => typedId(a.id).localeCompare(typedId(b.id)));
  const lines = [
    '# Command reference',
    '',
    '<!-- Generated from oclif.manifest.json by scripts/command-reference.js (npm run build). Do not edit. -->',
    '',
    'Every command also takes `--verbose` (debug detail on stderr) and `--log-file FILE` (the run log goes',
    'there instead of `$EDGEADM_HOME/logs`), and most take `--json` (one JSON document on stdout: the',
    'result, or `{"error": {code, message, hints}}`). `edgeadm COMMAND --help` (or `-h`, or',
    '`edgeadm help COMMAND`) prints the same as this page, for one command.',
    '',
    ...commands.map((command) => `- [edgeadm ${typedId(command.id)}](#${anchor(command.id)})`),
    '',
  ];
  for (const command of commands) lines.push(...renderCommand(command));
  return `${lines.join('\n').trimEnd()}\n`;
}

function renderCommand(command) {
  const id = typedId(command.id);
  const lines = [`## edgeadm ${id}`, ''];
  if (command.summary) lines.push(oneLine(command.summary), '');
  if (command.description) lines.push(...command.description.trim().split('\n'), '');
  const args = Object.values(command.args ?? {});
  if (args.length > 0) {
    lines.push('| argument | description |', '| --- | --- |');
    for (const arg of args) {
      const name = arg.required ? arg.name.toUpperCase() : `[${arg.name.toUpperCase()}]`;
      const options = arg.options ? ` (${arg.options.join(', ')})` : '';
      lines.push(`| \`${name}\` | ${cell(`${arg.description ?? ''}${options}`)} |`);
    }
    lines.push('');
  }
  const flags = Object.entries(command.flags ?? {}).filter(([name, flag]) => !GLOBAL_FLAGS.has(name) && !flag.hidden);
  if (flags.length > 0) {
    lines.push('| flag | default | description |', '| --- | --- | --- |');
    for (const [name, flag] of flags) lines.push(renderFlag(name, flag));
    lines.push('');
  }
  const examples = (command.examples ?? []).map(renderExample(command.id));
  if (examples.length > 0) lines.push('```sh', ...examples, '```', '');
  return lines;
}

function renderFlag(name, flag) {
  const char = flag.char ? `-${flag.char}, ` : '';
  const value = flag.type === 'option' ? (flag.options ? ` ${flag.options.join('\\|')}` : ' VALUE') : '';
  const repeat = flag.multiple ? ' (repeatable)' : '';
  const required = flag.required ? '**required** ' : '';
  const fallback = flag.default === undefined || flag.default === false ? '' : `\`${String(flag.default)}\``;
  const text = `${required}${flag.summary ?? flag.description ?? ''}${repeat}`;
  return `| \`${char}--${name}${value}\` | ${fallback} | ${cell(text)} |`;
}

function renderExample(id) {
  return (example) => {
    const text = typeof example === 'string' ? example : `# ${example.description}\n${example.command}`;
    return text.replaceAll('<%= config.bin %>', 'edgeadm').replaceAll('<%= command.id %>', typedId(id));
  };
}

/** GitHub's heading anchor for `## edgeadm <id>`. */
function anchor(id) {
  return `edgeadm-${typedId(id)}`.toLowerCase().replaceAll(' ', '-');
}

function oneLine(text) {
  return text.replaceAll('\n', ' ').trim();
}

function cell(text) {
  return oneLine(text).replaceAll('|', '\\|');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const manifest = JSON.parse(readFileSync(new URL('../oclif.manifest.json', import.meta.url), 'utf8'));
  writeFileSync(new URL('../docs/reference/commands.md', import.meta.url), renderCommandReference(manifest));
  console.log('docs/reference/commands.md: written');
}
