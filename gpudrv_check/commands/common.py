"""What the repo commands share: loading the config and the repo, verbose listings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpudrv_check.config import Config, load_config
from gpudrv_check.engine import Run, load, validate_rule_keys
from gpudrv_check.model.finding import printable


def repo_config(args: argparse.Namespace) -> tuple[Path, Config]:
    root = Path(args.path)
    from gpudrv_check.config import ConfigError

    if not root.is_dir():
        raise ConfigError(f"not a directory: {args.path}")
    config = load_config(root, getattr(args, "config", None))
    validate_rule_keys(config)
    version = getattr(args, "operator_version", None)
    if version:
        config.operator.version = version
    fail_on = getattr(args, "fail_on", None)
    if fail_on:
        config.fail_on = fail_on
    return root, config


def load_run(args: argparse.Namespace) -> Run:
    root, config = repo_config(args)
    run = load(root, config, getattr(args, "matrix", None))
    if getattr(args, "verbose", False):
        print_listing(run)
    return run


def print_listing(run: Run) -> None:
    out = sys.stderr
    for result in run.content.files:
        kinds = printable(", ".join(f"{m.kind}/{m.name or '?'}" for m in result.manifests))
        out.write(f"read    {result.rel}: {len(result.manifests)} object(s) {kinds}\n")
        for skipped in result.skipped:
            out.write(f"skipped {skipped.rel}: {skipped.reason}\n")
        for problem in result.problems:
            out.write(f"problem {problem.location}: {problem.rule} {problem.message}\n")
    for skipped in run.listing.skipped:
        out.write(f"skipped {skipped.rel}: {skipped.reason}\n")
    matrix = run.repo.matrix
    if matrix is None:
        out.write("matrix  none (driver image checks that need it are off)\n")
    else:
        out.write(f"matrix  {matrix.file}: {len(matrix.rows)} row(s)\n")
    skipped_docs = sum(len(f.skipped) for f in run.content.files)
    out.write(
        f"total   {len(run.content.files)} file(s), {run.content.object_count} object(s), "
        f"{skipped_docs} document(s) skipped, {len(run.listing.skipped)} path(s) skipped, "
        f"{len(run.repo.nodes)} node(s)\n"
    )
