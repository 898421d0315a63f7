"""Shell completion generated from the parser, and `--help` with a description and examples
for every command."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpudrv_check.cli import HELP
from gpudrv_check.cli.options import OPTION_TYPES
from tests.conftest import run_cli


def _complete(script: str, *words: str) -> list[str]:
    """What bash offers for the last of `words` (COMP_WORDS as bash would set them)."""
    quoted = " ".join(f"'{w}'" for w in ("gpudrv-check", *words))
    program = f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words)}; _gpudrv_check\n"
    program += 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_offers_commands_their_options_and_choices():
    result = run_cli("completion", "bash")
    assert result.returncode == 0, result.stderr
    script = result.stdout
    assert _complete(script, "re") == ["rehearse", "report"]
    assert "--staged" in _complete(script, "check", "--st")
    assert _complete(script, "check", "--fail-on", "") == ["error", "warning", "info", "never"]
    # per command: operands has two formats, check has every report format
    assert _complete(script, "operands", "--format", "") == ["text", "json"]
    assert "concise" in _complete(script, "check", "--format", "")
    assert "--workload" not in _complete(script, "check", "--")


def test_zsh_completion_loads_the_bash_script_through_bashcompinit():
    result = run_cli("completion", "zsh")
    assert result.returncode == 0
    assert result.stdout.startswith("autoload -Uz bashcompinit && bashcompinit\n")
    assert "complete -o filenames -F _gpudrv_check gpudrv-check" in result.stdout


@pytest.mark.parametrize("command", sorted(set(OPTION_TYPES)))
def test_every_command_help_has_a_description_and_examples(command: str):
    args = {"tag": ["NODE"], "plan": ["NODE", "--driver", "1.2.3"], "explain": ["GPU001"]}
    result = run_cli(command, "--help", *args.get(command, []))
    assert result.returncode == 0, result.stderr
    description, examples = HELP[command]
    assert " ".join(description.split()[:6]) in " ".join(result.stdout.split())
    assert "examples:" in result.stdout
    for line in examples.splitlines():
        assert "  " + line in result.stdout
        starts = ("gpudrv-check ", "kustomize ", "eval ", "kubectl ")
        assert line.split("#")[0].strip().startswith(starts)
