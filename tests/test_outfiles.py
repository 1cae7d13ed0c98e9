"""Every file a command writes follows evaluator/formats/outfiles.py: never over a workspace (or its -wal/-shm), a
FIFO, a
device or a folder (`error: PATH: …`, exit 2, the path untouched); through a symlink (the link stays); keeping an
existing file's mode (a new one gets the umask's); whole or not at all."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys

import pytest

from db import open_workspace
from evaluator.formats.outfiles import AtomicOutput, OutputRefused, check_output, write_file


def vlmdesk(ws_path, *args, umask: int | None = None) -> subprocess.CompletedProcess:
    """The real command, in a child process (PYTHONPATH is inherited, so it runs this checkout)."""
    return subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        preexec_fn=None if umask is None else (lambda: os.umask(umask)),
    )


def md5(path) -> str:
    return hashlib.md5(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """A workspace with the demo benchmarks, a verdict, a finished baseline run (run 1) and an adjudication set."""
    path = tmp_path_factory.mktemp("outfiles") / "ws.sqlite"
    for args in (
        ("demo",),
        ("run", "--bench", "demo", "--model", "baseline:first"),
        ("align", "sample", "--run", "1", "--size", "3", "--name", "s1"),
    ):
        done = vlmdesk(path, *args)
        assert done.returncode == 0, done.stderr
    from annotation import reviews
    from db import catalog

    with open_workspace(path) as w:
        item = catalog.list_items(w, catalog.benchmark_by_name(w, "demo").id)[0]
        reviews.add_review(w, item.id, "ana", "ok")
    return path


# Each command that writes a file, with the file argument last (FILE is replaced by the path under test).
WRITERS = {
    "reviews export": ["reviews", "export", "--out", "FILE"],
    "qc export-decisions": ["qc", "export-decisions", "--out", "FILE"],
    "align export-labels": ["align", "export-labels", "--set", "s1", "--out", "FILE"],
    "qc export": ["qc", "export", "demo", "--out", "FILE"],
    "export-predictions": ["export-predictions", "1", "--out", "FILE"],
    "report --plot": ["report", "1", "--plot", "FILE"],
    "show --image-out": ["show", "demo", "1", "--image-out", "FILE"],
}
SUFFIX = {"export-predictions": ".tsv", "report --plot": ".png", "show --image-out": ".jpg"}


def _args(name: str, path) -> list[str]:
    return [str(path) if a == "FILE" else a for a in WRITERS[name]]


@pytest.mark.parametrize("name", WRITERS)
def test_the_open_workspace_is_never_overwritten_directly_or_through_a_symlink(ws, tmp_path, name):
    before = md5(ws)
    link = tmp_path / f"out{SUFFIX.get(name, '.jsonl')}"
    link.symlink_to(ws)
    for target in (() if name in SUFFIX else (ws,)) + (link,):  # the three with a required suffix: by link only
        done = vlmdesk(ws, *_args(name, target))
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stderr == f"error: {target}: is a SQLite database (a workspace?); refusing to overwrite it\n"
    assert md5(ws) == before and link.is_symlink()
    with open_workspace(ws) as w:
        assert w.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 1


def test_the_wal_and_shm_files_of_a_workspace_are_refused(ws, tmp_path):
    for suffix in ("-wal", "-shm"):
        side = tmp_path / f"copy.sqlite{suffix}"
        (tmp_path / "copy.sqlite").write_bytes(open(ws, "rb").read())
        side.write_bytes(b"side")
        done = vlmdesk(ws, "reviews", "export", "--out", str(side))
        assert done.returncode == 2 and done.stderr.startswith(f"error: {side}: belongs to the SQLite database")
        assert side.read_bytes() == b"side"


@pytest.mark.parametrize("name", ["reviews export", "qc export", "show --image-out", "report --plot"])
def test_a_fifo_or_a_folder_is_refused_not_replaced_and_nothing_blocks(ws, tmp_path, name):
    fifo = tmp_path / f"pipe{SUFFIX.get(name, '.jsonl')}"
    os.mkfifo(fifo)
    folder = tmp_path / f"dir{SUFFIX.get(name, '.jsonl')}"
    folder.mkdir()
    for path, what in ((fifo, "is a FIFO (named pipe)"), (folder, "is a directory; give a file name")):
        done = vlmdesk(ws, *_args(name, path))  # a write into the FIFO would block until the timeout
        assert done.returncode == 2 and done.stderr == f"error: {path}: {what}; refusing to replace it\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and folder.is_dir() and not os.listdir(folder)


def test_a_character_device_is_refused_before_it_is_opened(tmp_path):
    with pytest.raises(OutputRefused, match="is a character device"):
        check_output("/dev/null")
    with pytest.raises(OutputRefused, match="no such directory"):
        check_output(tmp_path / "absent" / "x.jsonl")


@pytest.mark.parametrize("name", ["reviews export", "export-predictions", "report --plot"])
def test_a_symlink_is_written_through_and_the_mode_is_kept(ws, tmp_path, name):
    suffix = SUFFIX.get(name, ".jsonl")
    target, link = tmp_path / f"target{suffix}", tmp_path / f"link{suffix}"
    target.write_text("old")
    os.chmod(target, 0o640)
    link.symlink_to(target.name)  # relative, as links usually are
    done = vlmdesk(ws, *_args(name, link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes() != b"old" and target.stat().st_size > 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, link.name])  # no temporary left


def test_a_new_file_gets_the_umask_mode_not_0600(ws, tmp_path):
    for mask, mode in ((0o022, 0o644), (0o027, 0o640)):
        out = tmp_path / f"new-{mask:o}.jsonl"
        done = vlmdesk(ws, "reviews", "export", "--out", str(out), umask=mask)
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "keep.jsonl"
    path.write_text("old\n")

    def fail(f):
        f.write("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_file(path, fail)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["keep.jsonl"]
    out = AtomicOutput(path)
    out.open().write("cancelled")
    out.close(ok=False)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["keep.jsonl"]
    assert write_file(path, lambda f: f.write("new\n")) == 4 and path.read_text() == "new\n"
