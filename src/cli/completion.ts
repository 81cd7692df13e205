/**
 * Shell completion scripts, as `kubeadm completion bash|zsh` prints them:
 * the command words after `edgeadm`, then the flags of the command typed.
 * Pure: the script is made from the command table given.
 */

/** One command as completion needs it: its id (`hub:token:create`) and long flag names. */
export interface CompletionCommand {
  id: string;
  flags: readonly string[];
}

/** The shells `completion` writes a script for. */
export const COMPLETION_SHELLS = ['bash', 'zsh'] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

/** The completion script for `shell`; source it (`source <(edgeadm completion bash)`). */
export function completionScript(shell: CompletionShell, commands: readonly CompletionCommand[]): string {
  const bash = bashScript(commands);
  // zsh runs bash completion functions through bashcompinit, as kubectl's zsh script once did.
  return shell === 'zsh'
    ? `autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n${bash}`
    : bash;
}

function bashScript(commands: readonly CompletionCommand[]): string {
  const next = new Map<string, Set<string>>();
  for (const { id } of commands) {
    const words = id.split(':');
    for (let i = 0; i < words.length; i++) {
      const prefix = words.slice(0, i).join(' ');
      if (!next.has(prefix)) next.set(prefix, new Set());
      next.get(prefix)!.add(words[i]!);
    }
  }
  const wordCases = [...next.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([prefix, words]) => `    ${quote(prefix)}) words=${quote([...words].sort().join(' '))} ;;`);
  const flagCases = [...commands]
    .sort((a, b) => a.id.localeCompare(b.id))
    .map(
      ({ id, flags }) =>
        `    ${quote(id.replaceAll(':', ' '))}) flags=${quote(
          [...flags]
            .sort()
            .map((f) => `--${f}`)
            .join(' '),
        )} ;;`,
    );
  return `# edgeadm completion for bash: source <(edgeadm completion bash)
_edgeadm() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" typed="" command="" words="" flags="" w i
  # The command is the words before the first flag; the longest known prefix names it.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ $w == -* ]] && break
    typed="\${typed:+$typed }$w"
  done
  case "$typed" in
${wordCases.join('\n')}
  esac
  command="$typed"
  while [[ -n $command ]]; do
    case "$command" in
${flagCases.join('\n')}
    esac
    [[ -n $flags ]] && break
    [[ $command == *" "* ]] && command="\${command% *}" || command=""
  done
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [[ $i -eq $COMP_CWORD ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  else
    COMPREPLY=()
  fi
}
complete -o default -F _edgeadm edgeadm
`;
}

/** A single-quoted shell word. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
