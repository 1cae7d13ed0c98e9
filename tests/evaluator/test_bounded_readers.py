"""Every file vlmdesk reads goes through its bounded door (issue 40): POPE's question, answer and annotation files,
`extract --input` and the source a curated export re-reads for its header. A FIFO (which hung a plain open()), a
link to /dev/zero (read without end) and a sparse file over the reader's bound are one line, exit 2, without blocking.
The real CLI, in a child process with a timeout: a hang fails the test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from db import open_workspace
from evaluator.formats.importers import import_benchmark
from tests.factories import mmbench_rows, write_tsv
from tests.test_errors import one_line_error, vlmdesk

POPE = Path(__file__).resolve().parents[1] / "data" / "pope" / "coco_pope_random.json"
HOSTILE = ["a FIFO", "a link to /dev/zero", "a sparse file over the bound"]


def plant(path: Path, kind: str, sparse_bytes: int) -> str:
    """Put the hostile file at path; what the one line says about it."""
    if kind == "a FIFO":
        os.mkfifo(path)
        return f"error: {path}: path: is a FIFO (named pipe), not a regular file"
    if kind == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
        return f"error: {path}: path: is a character device, not a regular file"
    with open(path, "wb") as f:
        f.truncate(sparse_bytes)
    return f"error: {path}: path: is {sparse_bytes // 2**20} MB, over the limit"


def refused(proc, says: str) -> None:
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert line.startswith(says), line


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("which", ["--questions", "--answers"])
def test_pope_score_reads_its_files_through_the_bounded_door(tmp_path, kind, which):
    hostile = tmp_path / "hostile.jsonl"
    says = plant(hostile, kind, 2**30)  # the bound is 128 MB; real question files are 0.4 MB
    files = {"--questions": POPE, "--answers": POPE, which: hostile}
    questions, answers = str(files["--questions"]), str(files["--answers"])
    proc = vlmdesk("pope", "score", "--questions", questions, "--answers", answers, timeout=60)
    refused(proc, says)


@pytest.mark.parametrize("kind", HOSTILE)
def test_pope_build_reads_its_annotations_through_the_bounded_door(tmp_path, kind):
    hostile = tmp_path / "instances_val.json"
    says = plant(hostile, kind, 2**31)  # the bound is 1 GB: COCO's instances_train2017.json is 448 MB
    images = tmp_path / "images"
    images.mkdir()
    out = tmp_path / "pope.json"
    proc = vlmdesk(
        *("pope", "build", "--annotations", str(hostile), "--images", str(images)),
        *("--setting", "random", "--out", str(out)),
        timeout=60,
    )
    refused(proc, says)
    assert not out.exists()


def test_a_line_past_the_pope_line_bound_is_one_line_naming_it(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"text": "Yes"}\n' + '{"text": "' + "y" * 2**20 + '"}\n')
    proc = vlmdesk("pope", "score", "--questions", str(POPE), "--answers", str(answers), timeout=60)
    refused(proc, f"error: {answers}:2: line: longer than 1.0 MB")


@pytest.mark.parametrize("kind", HOSTILE)
def test_extract_reads_its_input_through_the_bounded_door(tmp_path, kind):
    hostile = tmp_path / "in.jsonl"
    says = plant(hostile, kind, 2**30).replace(": path: ", ": file: ")  # the bound is 256 MB
    proc = vlmdesk("--workspace", str(tmp_path / "ws.sqlite"), "extract", "--input", str(hostile), timeout=60)
    refused(proc, says)


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_curated_export_does_not_hang_on_a_source_swapped_for_a_hostile_file(tmp_path, kind):
    """The export re-reads the imported TSV's header; a source now hostile leaves the header to the items."""
    source = write_tsv(tmp_path / "bench.tsv", mmbench_rows(3, circular=False))
    ws = tmp_path / "ws.sqlite"
    with open_workspace(ws) as w:
        import_benchmark(w, source, name="b")
    shutil.move(source, tmp_path / "moved.tsv")
    plant(source, kind, 2**36)  # over the 32 GB bound of a benchmark file
    out = tmp_path / "curated.tsv"
    proc = vlmdesk("--workspace", str(ws), "qc", "export", "b", "--out", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding="utf-8").splitlines()[0].startswith("index\tquestion\t")
