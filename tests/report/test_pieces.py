"""A report in pieces (report/text.py `report_pieces`, report/__init__.py `iter_pieces`,
cli/commands/check.py): the pieces join to the report, are cut only between files' blocks,
are written and cached a piece at a time, and a cached run replays them byte for byte."""

from __future__ import annotations

import io
import sys

import pytest

from gpudrv_check.cli.commands import check as check_cmd
from gpudrv_check.core.finding import Finding, Location, terminal_text
from gpudrv_check.report import text as text_report


def _findings(files: int, per_file: int) -> list[Finding]:
    out = []
    for n in range(files):
        for k in range(per_file):
            out.append(
                Finding(
                    rule="GPU010",
                    severity="error" if k % 2 else "warning",
                    message=f"workload wl-{n}-{k} → can land nowhere … " + "word " * (k + 3),
                    hint="Add a toleration for the taint." if k == 1 else "Label a node.",
                    location=Location(file=f"apps/team-{n}/wl.yaml", line=k + 1, column=3),
                )
            )
    return out


def _whole(findings: list[Finding], summary: str | None, colour: bool = False) -> str:
    """The report as one join of all blocks, as the text format wrote it before pieces."""
    blocks: list[str] = []
    current = None
    lines: list[str] = []
    fixes: dict[str, list[str]] = {}
    for f in findings:
        if f.location.file != current:
            if current is not None:
                blocks.append("\n".join(lines))
            current, lines = f.location.file, [f.location.file]
        lines += text_report.finding_block(f, 100, colour, fixes)
    if current is not None:
        blocks.append("\n".join(lines))
    if summary is not None:
        blocks.append(summary)
    return "\n\n".join(blocks) + "\n" if blocks else ""


@pytest.mark.parametrize("piece", [1, 50, 300, 1 << 20])
@pytest.mark.parametrize("summary", [None, "3 files read; 2 errors"])
@pytest.mark.parametrize(("files", "per_file"), [(0, 0), (1, 1), (7, 3), (40, 2)])
def test_pieces_join_to_the_report_and_end_between_blocks(
    monkeypatch, piece, summary, files, per_file
):
    monkeypatch.setattr(text_report, "PIECE", piece)
    findings = _findings(files, per_file)
    pieces = list(text_report.report_pieces(findings, summary, False, 100))
    assert "".join(pieces) == _whole(findings, summary)
    heads = {f.location.file for f in findings} | ({summary} if summary else set())
    if len(heads) > 1 and piece < 300:
        assert len(pieces) > 1
    for made in pieces[:-1]:
        assert made.endswith("\n\n") and not made.endswith("\n\n\n")
    for made in pieces[1:]:
        # every piece starts with a file's heading (or the summary): never inside a block
        assert made.split("\n", 1)[0] in heads


def test_terminal_text_of_each_piece_is_the_terminal_text_of_the_report(monkeypatch):
    monkeypatch.setattr(text_report, "PIECE", 64)
    findings = _findings(12, 3)
    for colour in (False, True):
        # a finding's own text is made printable when it is made: the summary is not
        summary = "note: \x1b]52;c;eA==\x07 read"
        pieces = list(text_report.report_pieces(findings, summary, colour, 100))
        assert len(pieces) > 3
        whole = "".join(pieces)
        assert "\x1b]52" in whole and ("\x1b[" in whole) == colour
        cleaned = "".join(terminal_text(p, colour=colour) for p in pieces)
        assert cleaned == terminal_text(whole, colour=colour)


@pytest.mark.parametrize("slice_", [1, 7, 1 << 20])
def test_a_report_is_written_a_slice_at_a_time_with_the_same_bytes(monkeypatch, slice_):
    monkeypatch.setattr(check_cmd, "_WRITE_SLICE", slice_)
    text = "apps/a.yaml\n  1:1 error GPU010 → … é 日\n" * 5
    out = io.BytesIO()
    stream = io.TextIOWrapper(out, encoding="utf-8", newline="")
    monkeypatch.setattr(sys, "stdout", stream)
    check_cmd._perform("stdout", "", text)
    stream.flush()
    assert out.getvalue() == text.encode("utf-8")


@pytest.mark.parametrize("slice_", [1, 1 << 20])
def test_a_report_in_utf8_goes_to_the_buffer_after_what_was_written_as_text(monkeypatch, slice_):
    """A piece `check` encoded once (`_encoded`, `terminal_bytes`) is written to the
    interpreter's UTF-8 stdout's buffer as it is, after the text written before it; another
    stream (a latin-1 PYTHONIOENCODING, a StringIO, a stream put in stdout's place whose
    newline translation cannot be asked) gets it as text, encoded its own way."""
    monkeypatch.setattr(check_cmd, "_WRITE_SLICE", slice_)
    piece = "apps/a.yaml\n  1:1 error GPU010 → … é 日\n" * 5

    def interpreters(stream):
        monkeypatch.setattr(sys, "stdout", stream)
        monkeypatch.setattr(sys, "__stdout__", stream)

    out = io.BytesIO()
    stream = io.TextIOWrapper(out, encoding="UTF8", newline="")
    interpreters(stream)
    check_cmd._perform("stdout", "", "first ")
    check_cmd._perform("stdout", "", piece.encode("utf-8"))
    check_cmd._perform("stdout", "", "last")
    stream.flush()
    assert out.getvalue() == ("first " + piece + "last").encode("utf-8")
    latin = io.BytesIO()
    stream = io.TextIOWrapper(latin, encoding="latin-1", errors="replace", newline="")
    interpreters(stream)
    check_cmd._perform("stdout", "", piece.encode("utf-8"))
    # a damaged result entry's bytes (its MAC held): replacement characters, not a crash
    check_cmd._perform("stdout", "", b"bad \xff\n")
    stream.flush()
    assert latin.getvalue() == (piece + "bad \ufffd\n").encode("latin-1", "replace")
    plain = io.StringIO()
    interpreters(plain)
    check_cmd._perform("stdout", "", piece.encode("utf-8"))
    assert plain.getvalue() == piece
    crlf = io.BytesIO()
    embedded = io.TextIOWrapper(crlf, encoding="utf-8", newline="\r\n")
    monkeypatch.setattr(sys, "stdout", embedded)  # not the interpreter's own stdout
    check_cmd._perform("stdout", "", piece.encode("utf-8"))
    embedded.flush()
    assert crlf.getvalue() == piece.replace("\n", "\r\n").encode("utf-8")


def test_a_report_in_utf8_on_a_terminal_goes_out_at_once(monkeypatch):
    """A line-buffered stdout (a terminal) sends each line as it is written: the bytes of a
    piece too, so that what is written to stderr next comes after them (a review found the
    end of a report held until the exit, after a later error on stderr)."""
    out = io.BytesIO()
    stream = io.TextIOWrapper(io.BufferedWriter(out, 1 << 16), encoding="utf-8", newline="")
    stream.reconfigure(line_buffering=True)
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "__stdout__", stream)
    check_cmd._perform("stdout", "", "a.yaml:1:1 → x\n".encode())
    assert out.getvalue() == "a.yaml:1:1 → x\n".encode()  # no flush asked


def test_a_piece_utf8_cannot_encode_stays_text():
    assert check_cmd._encoded("a → b") == "a → b".encode()
    assert check_cmd._encoded("a\ud800") == "a\ud800"


def test_a_file_report_of_utf8_pieces_is_their_bytes(tmp_path):
    dest = tmp_path / "report.txt"
    check_cmd._emit("file", str(dest), ["a → ".encode(), b"b\n"], "")
    assert dest.read_bytes() == "a → b\n".encode()
    check_cmd._emit("file", str(dest), ["a → ".encode(), "b\n"], "")
    assert dest.read_bytes() == "a → b\n".encode()


def test_a_result_entry_holds_each_report_in_its_pieces():
    pairs = [("text", check_cmd.STDOUT)]
    actions = [("stdout", "", ["apps/a.yaml\n  1:1 …\n\n", "apps/b.yaml\n  2:1 …\n"])]
    packed = check_cmd.Outcome.pack([], "", actions)
    outcome = check_cmd.Outcome.unpack(packed, pairs)
    assert outcome is not None and outcome.reports == [actions[0][2]]
    # an entry holding a report as one string (the layout before pieces) is a miss
    assert check_cmd.Outcome.unpack(({}, "", ["apps/a.yaml\n"], {}), pairs) is None
    assert check_cmd.Outcome.unpack(({}, "", [["ok", 3]], {}), pairs) is None
    # pieces in UTF-8 (what `check` stores now) or text; nothing else
    utf8 = [("stdout", "", [b"apps/a.yaml\n", "x\n"])]
    outcome = check_cmd.Outcome.unpack(check_cmd.Outcome.pack([], "", utf8), pairs)
    assert outcome is not None and outcome.reports == [[b"apps/a.yaml\n", "x\n"]]
    assert check_cmd.Outcome.unpack(({}, "", [[bytearray(b"x")]], {}), pairs) is None


def test_a_cached_run_replays_a_report_of_many_pieces(tmp_path, monkeypatch, capsys):
    from gpudrv_check.cli import main
    from tests.conftest import gpu_node, write

    root = tmp_path / "repo"
    write(
        root, "support-matrix.csv", "driver_branch,kernel,os_tag\n550,6.8.0-1-generic,ubuntu22.04\n"
    )
    for n in range(30):
        write(root, f"nodes/gpu-{n}.yaml", gpu_node(f"gpu-{n}", kernel="5.15.0-120-generic"))
    monkeypatch.setattr(text_report, "PIECE", 200)
    args = ["check", str(root), "--cache-dir", str(tmp_path / "cache"), "--fail-on", "never"]
    outs = []
    for _ in range(2):
        monkeypatch.setattr(sys, "argv", ["gpudrv-check", *args])
        assert main() == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0].count("gpu-") >= 30
    monkeypatch.setattr(sys, "argv", ["gpudrv-check", *args, "--no-cache"])
    assert main() == 0
    assert capsys.readouterr().out == outs[0]


def test_a_kept_text_is_coloured_in_its_first_line_only_as_a_block_is():
    # Finding.rendered (the text the partition cache keeps) coloured as finding_block colours
    # a block: the severity in the first line, never a word of the message further down (a
    # long custom rule id pushes the severity to the end of the first line, without a blank)
    from gpudrv_check.core.finding import Severity
    from gpudrv_check.report.text import finding_text, report_pieces

    def finding(rule: str) -> Finding:
        return Finding(
            rule=rule,
            severity=Severity.ERROR,
            message="error found in web: it has no owner label, error again",
            hint="Add an owner label; an error otherwise.",
            location=Location(file="a/cm.yaml", line=12, column=3),
        )

    for rule in ("GPU001", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGH001"):
        for width in (40, 60, 100):
            for colour in (False, True):
                plain = list(report_pieces([finding(rule)], None, colour, width))
                kept = finding(rule)
                kept.rendered = (width, finding_text(kept, width))
                kept_pieces = list(report_pieces([kept], None, colour, width))
                assert kept_pieces == plain, (rule, width, colour)


def test_a_raw_stdout_that_takes_part_of_a_write_gets_the_rest():
    """Under `python -u` stdout's buffer is the raw file, whose write may take part of what
    it is given (a signal during a write to a pipe): the rest is written after it."""

    class Partial(io.RawIOBase):
        def __init__(self) -> None:
            self.got = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:
            taken = bytes(data[:3])
            self.got += taken
            return len(taken)

    raw = Partial()
    check_cmd._write_all(raw, "a → b\n".encode() * 10)
    assert bytes(raw.got) == "a → b\n".encode() * 10


def test_the_text_report_is_made_a_piece_at_a_time(monkeypatch):
    """report/text.py `report_pieces` (what `check` encodes piece by piece): each piece made
    only when the one before it was taken, so `check` holds the encoded pieces and one piece
    of text, not the whole text as well."""
    monkeypatch.setattr(text_report, "PIECE", 2000)
    findings = _findings(400, 6)
    whole = list(text_report.report_pieces(findings, "summary", False, 100))
    assert len(whole) > 2
    taken = []

    def counted():
        for f in findings:
            taken.append(f)
            yield f

    stream = text_report.report_pieces(counted(), "summary", False, 100)
    first = next(stream)
    assert first == whole[0] and len(taken) < len(findings) / 2
    assert [first, *stream] == whole
