"""`inventory import`: a `kubectl get nodes` export → the repo's compact NodeInventory.

The checker stays offline: a job that can reach the cluster runs `kubectl get nodes -o json`
and pipes it here (see docs/inventory.md). Standard output by default; `--output FILE` writes
a file; `--write` updates the inventory file the repo's config names, keeping its comments.
Both writes are atomic, and a file whose content would not change is not touched.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpudrv_check.cli import INVENTORY_MAX_BYTES
from gpudrv_check.cli.options import InventoryOptions
from gpudrv_check.core.finding import terminal_text
from gpudrv_check.edit.inventory_import import (
    ImportError_,
    check_updatable,
    join_encoding,
    read_export,
    render,
    split_encoding,
    update,
)
from gpudrv_check.read.config import Config, ConfigError, load_config
from gpudrv_check.read.safe_io import TooLarge, read_named, resolve_inside, write_atomic
from gpudrv_check.read.source import clean_rel

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
DEFAULT_MAX_BYTES = INVENTORY_MAX_BYTES


class ChangedMeanwhile(Exception):
    """The inventory file changed between its reading and the rename of the new one."""


def _usage(message: str) -> int:
    sys.stderr.write(f"gpudrv-check: error: {message}\n")
    return EXIT_USAGE


def _cannot_write(path: str | Path, err: OSError) -> str:
    """`cannot write FILE: reason` (the old file, if any, is as it was: writes are atomic)."""
    return terminal_text(f"cannot write {path}: {err.strerror or err}; nothing written")


def _read_stdin(limit: int) -> bytes:
    """Standard input, refused past `limit` bytes (a pipe has no size to check first)."""
    stream = getattr(sys.stdin, "buffer", None)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(1 << 20) if stream is not None else sys.stdin.read(1 << 20).encode()
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise TooLarge(size, limit, "<stdin>")
        chunks.append(chunk)


def _read_input(given: str, limit: int) -> bytes:
    return _read_stdin(limit) if given == "-" else read_named(given, limit)


def _target(args: InventoryOptions) -> tuple[Path, Path, Config] | str:
    """(repo root, inventory file, the repo's config) for `--write`, or the usage error."""
    root = Path(args.root or ".")
    try:
        config = load_config(root, args.config)
        files = _cluster_inventory(root, config, args.cluster) if args.cluster else config.inventory
    except ConfigError as err:
        return str(err)
    files = sorted(set(files))
    if len(files) != 1:
        found = ", ".join(files) if files else "none"
        where = f"cluster {args.cluster}" if args.cluster else "the config (`inventory:`)"
        return (
            f"--write updates the one inventory file of {where}, found {found}; "
            "use --output FILE instead"
        )
    rel = files[0]
    clean = clean_rel(rel)
    if clean is None or resolve_inside(root, clean) is None:
        return (
            f"inventory path {rel!r} leaves the repo root; --write only writes inside the repo"
            " (use --output FILE for a file elsewhere)"
        )
    return root, root / clean, config


def _config_labels(config: Config) -> tuple[str, ...]:
    """The label keys the repo's config names under `labels:` that no kept family holds
    (`labels.kernel: example.com/kernel-version`): the checker reads the driver tag from them,
    so an import that dropped them would leave every node without it (audit MISSING-LABEL).
    They are kept as `--labels-prefix` keeps a prefix."""
    from gpudrv_check.edit.inventory_import import KEPT_LABELS

    labels = config.labels
    keys = [*labels.driver_branch, labels.kernel, labels.os_id, labels.os_version_id]
    return tuple(k for k in dict.fromkeys(keys) if "/" in k and not k.startswith(KEPT_LABELS))


def _cluster_inventory(root: Path, config: Config, name: str) -> list[str]:
    """The NodeInventory files of one cluster: those its paths hold and its config names.

    Not the node files every cluster reads (the repo's `inventory:`, a nodes.yaml no cluster
    applies): they hold the other clusters' nodes too, which one cluster's export would drop.
    """
    from gpudrv_check.engine.run import load
    from gpudrv_check.model.inventory import is_inventory

    run = load(root, config, matrix_optional=True, cluster=name)
    one = run.clusters[0]  # `load` raises a ConfigError for a name that is no cluster
    assert one.cluster is not None
    paths = one.cluster.files
    held = {m.file for m in one.repo.manifests if is_inventory(m) and m.file in paths}
    return sorted(held | {clean_rel(rel) or rel for rel in one.cluster.inventory})


def run(args: InventoryOptions) -> int:
    if args.action != "import":
        return _usage(f"unknown inventory action {args.action!r}")
    limit = args.max_bytes or DEFAULT_MAX_BYTES
    name = args.source_name or ("standard input" if args.file == "-" else Path(args.file).name)
    try:
        data = _read_input(args.file, limit)
    except TooLarge as err:
        return _usage(f"{args.file} is {err.size} bytes, over --max-bytes ({limit})")
    except OSError as err:
        return _usage(f"cannot read {args.file}: {err.strerror or type(err).__name__}")
    try:
        imported = read_export(name, data)
    except ImportError_ as err:
        return _usage(terminal_text(str(err)))
    prefixes = tuple(args.labels_prefix or ())
    errors = 0
    for finding in imported.findings:
        errors += finding.severity.value == "error"
        sys.stderr.write(
            terminal_text(
                f"{finding.location}: {finding.severity.value} {finding.rule} {finding.message}"
            )
            + "\n"
        )
    if imported.skipped_items:
        sys.stderr.write(f"gpudrv-check: {imported.skipped_items} item(s) that are not Nodes\n")
    if args.write:
        target = _target(args)
        if isinstance(target, str):
            return _usage(target)
        root, path, config = target
        prefixes = (*prefixes, *_config_labels(config))
        try:
            raw = read_named(path, limit, root)
            old, bom, crlf = split_encoding(raw)
        except FileNotFoundError:
            raw, old, bom, crlf = b"", "", False, False
        except (OSError, UnicodeDecodeError) as err:
            return _usage(f"cannot read {path}: {getattr(err, 'strerror', None) or err}")
        try:
            check_updatable(str(path), old)
        except ImportError_ as err:
            return _usage(terminal_text(str(err)))
        text = update(old, imported, prefixes) if old.strip() else render(imported, prefixes)
        data = join_encoding(text, bom, crlf)  # the file's own BOM and line ends, kept
        if data == raw:
            sys.stderr.write(f"gpudrv-check: {path} is up to date\n")
        else:

            def unchanged() -> None:
                # another writer (an editor, a second import) since it was read: its edit
                # would be lost; abandon ours instead (as `plan --write` does)
                try:
                    now: bytes | None = read_named(path, limit, root)
                except FileNotFoundError:
                    now = b""
                if now != raw:
                    raise ChangedMeanwhile(f"{path} changed while it was being rewritten")

            try:
                write_atomic(path, data, root, before_rename=unchanged)
            except ChangedMeanwhile as err:
                return _usage(f"{err}; nothing written, run the import again")
            except OSError as err:
                return _usage(_cannot_write(path, err))
            sys.stderr.write(f"gpudrv-check: wrote {path} ({len(imported.nodes)} nodes)\n")
    else:
        text = render(imported, prefixes)
        if args.output:
            try:
                old_bytes = read_named(args.output, limit)
            except OSError:
                old_bytes = None
            if old_bytes != text.encode():
                try:
                    write_atomic(args.output, text.encode())
                except OSError as err:
                    return _usage(_cannot_write(args.output, err))
        else:
            sys.stdout.write(text)
    return EXIT_FINDINGS if errors else EXIT_OK
