#!python
"""The `gpudrv-check` command as installed (pyproject.toml: the wheel's shared script).

Not the launcher an installer writes for a `[project.scripts]` entry: pip's imports `re` (to
strip a Windows `-script.py` or `.exe` suffix from `sys.argv[0]`), 4-5 ms of the 9 ms a bare
`python -c pass` takes, which `--version` and every pre-commit hook start would pay. The
installer rewrites the first line to the environment's interpreter."""

if __name__ == "__main__":
    from gpudrv_check.cli import run

    run()
