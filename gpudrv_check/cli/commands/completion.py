"""`gpudrv-check completion bash|zsh`: a completion script, generated from the parser itself
(so it never lists an option the parser does not have). zsh loads the bash script through its
`bashcompinit`."""

from __future__ import annotations

import sys

from gpudrv_check.cli.options import CompletionOptions


def bash_script() -> str:
    from gpudrv_check.cli import command_words

    words = command_words()
    commands = " ".join(sorted(words))
    cases, values = [], []
    for name, (flags, choices) in sorted(words.items()):
        cases.append(f'        {name}) opts="{" ".join(flags)}" ;;')
        for flag, options in sorted(choices.items()):
            reply = f'COMPREPLY=($(compgen -W "{" ".join(options)}" -- "$cur"))'
            values.append(f"        {name}:{flag}) {reply}; return ;;")
    return "\n".join(
        [
            "# gpudrv-check completion (bash; zsh via bashcompinit)",
            "_gpudrv_check() {",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
            '    local command="${COMP_WORDS[1]}" opts=""',
            '    if [ "$COMP_CWORD" -eq 1 ]; then',
            f'        COMPREPLY=($(compgen -W "{commands} --version --help" -- "$cur"))',
            "        return",
            "    fi",
            '    case "$command:$prev" in',
            *values,
            "    esac",
            '    case "$command" in',
            *cases,
            "    esac",
            '    if [[ "$cur" == -* ]]; then',
            '        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))',
            "    else",
            '        COMPREPLY=($(compgen -f -- "$cur"))',
            "    fi",
            "}",
            "complete -o filenames -F _gpudrv_check gpudrv-check",
            "",
        ]
    )


def run(options: CompletionOptions) -> int:
    script = bash_script()
    if options.shell == "zsh":
        script = "autoload -Uz bashcompinit && bashcompinit\n" + script
    sys.stdout.write(script)
    return 0
