"""A full disk is said to be one by every writer (issue 22): `error: WS: the disk is full (…)`, exit 1 — never
"disk I/O error" alone (SQLite's word when there is no room for the -shm or a -wal page) nor an internal error
raised by the cleanup ("database import_stage is locked"). The workspace sits on a tmpfs of a few KB more than it
needs: a real full disk, through the real commands (mounting needs root; the test skips elsewhere)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.factories import jpeg_bytes
from tests.test_errors import one_line_error, vlmdesk


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("full") / "ws.sqlite"
    assert vlmdesk("--workspace", str(path), "demo").returncode == 0
    assert vlmdesk("--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first").returncode == 0
    return path


@pytest.fixture
def tiny_disk(tmp_path):
    """mount(folder, size_bytes): a tmpfs of that size at folder, unmounted after the test."""
    mounted: list[Path] = []

    def mount(folder: Path, size: int) -> Path:
        folder.mkdir()
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size // 1024}k", "tmpfs", str(folder)], capture_output=True
        )
        if proc.returncode != 0:
            pytest.skip("mounting a tmpfs needs root")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", str(folder)], check=True)


def _parquet(path: Path, rows: int = 60) -> Path:
    images = [jpeg_bytes(i, side=200) for i in range(rows)]
    table = pa.table(
        {
            "index": list(range(rows)),
            "question": [f"question {i}" for i in range(rows)],
            "A": ["a"] * rows,
            "B": ["b"] * rows,
            "answer": ["A"] * rows,
            "image": pa.array([{"bytes": b, "path": f"{i}.jpg"} for i, b in enumerate(images)]),
        }
    )
    pq.write_table(table, path, row_group_size=16)
    return path


@pytest.mark.parametrize("room_kb", [4, 16, 64, 512])
def test_import_on_a_full_disk_says_the_disk_is_full(demo_ws, tiny_disk, tmp_path, room_kb):
    source = _parquet(tmp_path / "big.parquet")
    disk = tiny_disk(tmp_path / "disk", os.path.getsize(demo_ws) + room_kb * 1024)
    ws = Path(shutil.copy(demo_ws, disk / "ws.sqlite"))
    proc = vlmdesk("--workspace", str(ws), "import", str(source), env={"VLMDESK_LOG_DIR": str(tmp_path / "logs")})
    assert proc.returncode == 1
    assert one_line_error(proc).startswith(f"error: {ws}: the disk is full ("), proc.stderr
    assert not (tmp_path / "logs").exists()  # no internal error was logged


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--bench", "demo", "--model", "baseline:random"],
        ["import-predictions", "PREDICTIONS", "--bench", "demo", "--model", "elsewhere"],
        ["guidelines", "set", "demo", "RULES", "--author", "lead"],
    ],
)
def test_other_writers_on_a_full_disk_say_so(demo_ws, tiny_disk, tmp_path, argv):
    predictions = tmp_path / "first_demo.tsv"
    assert vlmdesk("--workspace", str(demo_ws), "export-predictions", "1", "--out", str(predictions)).returncode == 0
    disk = tiny_disk(tmp_path / "disk", os.path.getsize(demo_ws) + 4096)
    ws = Path(shutil.copy(demo_ws, disk / "ws.sqlite"))
    rules = tmp_path / "rules.md"
    rules.write_text("# Rules\n" + "Judge the key, not the model.\n" * 2000)
    argv = [{"PREDICTIONS": str(predictions), "RULES": str(rules)}.get(a, a) for a in argv]
    proc = vlmdesk("--workspace", str(ws), *argv, env={"VLMDESK_LOG_DIR": str(tmp_path / "logs")})
    assert proc.returncode == 1, proc.stderr
    assert one_line_error(proc).startswith(f"error: {ws}: the disk is full ("), proc.stderr
