"""`vlmdesk fetch` against a hostile cache, server and environment (issue 40): links, folders and FIFOs planted in a
shared cache are refused before a byte is asked and never written through; the deadline holds while a server drips
its headers; a FIFO as $VLMDESK_CATALOG is refused without blocking; a mirror's password is never printed and
$HF_TOKEN goes to huggingface.co only; a full disk, a folder where the file goes and an unwritable --to are one line;
an endless body is cut at the catalog's size and dropped. Real servers on 127.0.0.1, real links, FIFOs and a real
tmpfs (root; skipped elsewhere)."""

from __future__ import annotations

import hashlib
import json
import os
import socketserver
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.evaluator.test_fetch import _cli, _entry, _tsv_bytes, env  # noqa: F401 (env: the fixture)
from tests.file_server import FileServer
from tests.test_errors import one_line_error, vlmdesk

PATH = "/files/Hostile.tsv"
REPO = Path(__file__).resolve().parents[2]


def _workspace(path: Path) -> bytes:
    """A real SQLite file to plant links to; returns its bytes, to compare after."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES ('precious')")
    db.close()
    return path.read_bytes()


# ------------------------------------------------------------------------------------------------ a shared cache


def test_a_link_planted_as_the_part_meta_is_refused_and_the_workspace_kept(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 4)
    cache = env(_entry("Hostile", data))
    cache.mkdir(parents=True)
    ws = tmp_path / "ws.sqlite"
    before = _workspace(ws)
    (cache / "Hostile.tsv.part.json").symlink_to(ws)
    with FileServer({PATH: data}) as server:
        code, _, err = _cli(capsys, "fetch", "Hostile", "--mirror", server.url)
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"error: {cache / 'Hostile.tsv.part.json'}: is a symbolic link;"), err
        assert server.requests == []  # refused before a byte was asked
    assert ws.read_bytes() == before and (cache / "Hostile.tsv.part.json").is_symlink()


def test_a_link_planted_as_the_part_is_never_truncated_when_the_file_changed(env, tmp_path, capsys):
    old, new = _tsv_bytes(tmp_path, 4, seed=1), _tsv_bytes(tmp_path, 4, seed=2)
    cache = env(_entry("Hostile", old))
    cache.mkdir(parents=True)
    ws = tmp_path / "ws.sqlite"
    before = _workspace(ws)
    with FileServer({PATH: new}) as server:  # the file changed on the server: a resume answers 200, the whole file
        url = f"{server.url}{PATH}"
        meta = {"url": url, "checksum": f"md5:{hashlib.md5(old).hexdigest()}", "validator": '"an-old-etag"'}
        (cache / "Hostile.tsv.part.json").write_text(json.dumps(meta))
        (cache / "Hostile.tsv.part").symlink_to(ws)
        code, _, err = _cli(capsys, "fetch", "Hostile", "--mirror", server.url)
        assert code == 2 and f"{cache / 'Hostile.tsv.part'}: is a symbolic link" in err, err
        assert server.requests == []
    assert ws.read_bytes() == before


@pytest.mark.parametrize(
    "planted", ["folder_as_file", "folder_as_part", "link_as_lock", "fifo_as_part", "link_as_file"]
)
def test_odd_things_where_the_cache_writes_are_refused_before_downloading(env, tmp_path, capsys, planted):
    data = _tsv_bytes(tmp_path, 4)
    cache = env(_entry("Hostile", data))
    cache.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    path = {
        "folder_as_file": cache / "Hostile.tsv",
        "folder_as_part": cache / "Hostile.tsv.part",
        "link_as_lock": cache / ".Hostile.tsv.lock",
        "fifo_as_part": cache / "Hostile.tsv.part",
        "link_as_file": cache / "Hostile.tsv",  # a link to a file that is not the benchmark: not replaced
    }[planted]
    if planted.startswith("folder"):
        path.mkdir()
    elif planted.startswith("fifo"):
        os.mkfifo(path)
    else:
        path.symlink_to(victim)
    with FileServer({PATH: data}) as server:
        code, _, err = _cli(capsys, "fetch", "Hostile", "--mirror", server.url)
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {path}: is "), err
        assert server.requests == []
    assert victim.read_bytes() == b"keep me"


def test_a_link_as_the_hub_folder_is_refused_and_its_target_kept(env, tmp_path, capsys, monkeypatch):
    """Stale shards are removed from the entry's folder: a link planted there would remove another folder's."""
    cache = env({"name": "hub_dev", "layout": "lmms-lab", "repo": "lmms-lab/MMBench", "config": "en", "split": "dev"})
    cache.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.parquet").write_bytes(b"someone's data")
    (cache / "hub_dev").symlink_to(elsewhere)
    with FileServer({}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        code, _, err = _cli(capsys, "fetch", "hub_dev")
        assert code == 2 and f"{cache / 'hub_dev'}: is not a folder of shards" in err, err
        assert server.requests == []
    assert (elsewhere / "mine.parquet").read_bytes() == b"someone's data"


# ------------------------------------------------------------------------------------------------ hostile servers


class _RawServer(socketserver.ThreadingTCPServer):
    """A server on 127.0.0.1 that reads a request and then misbehaves: `drip` sends a status line and then a
    header line every 0.3 s for ever; `endless` sends headers without a length and then bytes for ever."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, mode: str):
        self.mode = mode
        self.stop = threading.Event()
        self.asked = threading.Event()
        self.sent = 0
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                f = self.request.makefile("rb")
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                server.asked.set()
                try:
                    if server.mode == "drip":
                        self.request.sendall(b"HTTP/1.1 200 OK\r\n")
                        while not server.stop.wait(0.3):
                            self.request.sendall(b"X-Drip: 1\r\n")
                    else:
                        self.request.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                        block = b"x" * 65536
                        while not server.stop.is_set():
                            self.request.sendall(block)
                            server.sent += len(block)
                except OSError:
                    pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.shutdown()
        self.server_close()


def _catalog(tmp_path: Path, *entries: dict) -> dict[str, str]:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(list(entries)))
    return {"VLMDESK_CATALOG": str(catalog), "VLMDESK_CACHE_DIR": str(tmp_path / "cache"), "VLMDESK_MIRROR": ""}


def test_the_deadline_holds_while_a_server_drips_its_headers(tmp_path):
    env = _catalog(tmp_path, _entry("Drip", b"x"))
    with _RawServer("drip") as server:
        argv = [sys.executable, "-m", "vlmdesk", "fetch", "Drip", "--mirror", server.url, "--timeout", "3"]
        proc = subprocess.Popen(
            [*argv, "--idle-timeout", "2"],
            env={**os.environ, "PYTHONPATH": str(REPO), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            while not server.asked.wait(0.1):
                assert proc.poll() is None, proc.communicate()
            # from the first byte asked: 3x the deadline, generously, or the child is killed (a failure)
            _, stderr = proc.communicate(timeout=9)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "past the deadline (--timeout)" in lines[0], stderr


def test_an_endless_body_is_cut_at_the_catalogs_size_and_dropped(env, tmp_path, capsys):
    cache = env(_entry("Endless", b"x", size=200_000))
    with _RawServer("endless") as server:
        code, _, err = _cli(capsys, "fetch", "Endless", "--mirror", server.url)
    assert code == 1 and "over 220001 bytes, more than expected; the download was removed" in err, err
    assert not (cache / "Endless.tsv.part").exists() and not (cache / "Endless.tsv.part.json").exists()


def test_a_fifo_or_a_device_as_the_catalog_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "catalog.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    for path, kind in ((fifo, "a FIFO (named pipe)"), (link, "a character device")):
        proc = vlmdesk("fetch", "--list", env={"VLMDESK_CATALOG": str(path)}, timeout=60)
        assert proc.returncode == 2
        assert one_line_error(proc) == f"error: {path} is {kind}, not a regular file ($VLMDESK_CATALOG)"


# ------------------------------------------------------------------------------------------------ secrets


def test_a_mirrors_password_is_never_printed(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 3)
    env(_entry("Secret", data), _entry("Absent", b"y"))
    with FileServer({"/files/Secret.tsv": data}) as server:
        mirror = server.url.replace("http://", "http://alice:S3cretPass@")
        code, out, err = _cli(capsys, "fetch", "Secret", "--mirror", mirror, "--json-progress")
        assert code == 0, err
        assert (
            json.loads(out.splitlines()[0])["url"] == f"{server.url.replace('http://', 'http://***@')}/files/Secret.tsv"
        )
        assert server.authorization[-1] and server.authorization[-1].startswith("Basic ")  # used, as Basic auth
        code, out, err = _cli(capsys, "fetch", "Absent", "--mirror", mirror, "--json-progress")
        assert code == 1 and "HTTP 404" in err and "***@" in err
        port = server.url.rsplit(":", 1)[1]
    code, _, err2 = _cli(capsys, "fetch", "Absent", "--mirror", f"http://alice:S3cretPass@127.0.0.1:{port}")
    assert code == 1 and "cannot connect" in err2
    code, _, err3 = _cli(capsys, "fetch", "Absent", "--mirror", "http://alice:S3cretPass@host with space")
    assert code == 2
    assert "S3cretPass" not in out + err + err2 + err3


def test_hf_token_is_sent_to_huggingface_only(env, tmp_path, capsys, monkeypatch):
    from tests.evaluator.test_fetch import _hub_tree

    env({"name": "hub_dev", "layout": "lmms-lab", "repo": "lmms-lab/MMBench", "config": "en", "split": "dev"})
    tree = "/api/datasets/lmms-lab/MMBench/tree/main/en"
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    with FileServer({tree: _hub_tree("lmms-lab/MMBench", {}).encode()}) as server:
        code, _, err = _cli(capsys, "fetch", "hub_dev", "--mirror", server.url)
        assert code == 1 and "no en/dev-*.parquet file" in err and "hf_secret_token" not in err
        assert server.authorization == [None]  # a mirror is another party
    from evaluator.formats.importers.fetch import HUB, hub_token_headers

    assert hub_token_headers(HUB) == {"Authorization": "Bearer hf_secret_token"}
    assert hub_token_headers("https://hf-mirror.com") == {} and hub_token_headers("http://huggingface.co") == {}


# ------------------------------------------------------------------------------------------------ the disk


def test_an_unwritable_to_folder_is_one_line_before_downloading(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 3)
    env(_entry("Where", data))
    with FileServer({PATH: data}) as server:
        code, _, err = _cli(capsys, "fetch", "Where", "--mirror", server.url, "--to", "/proc/self")
        assert code == 2 and err.startswith("error: /proc/self: cannot write there (") and err.count("\n") == 1, err
        assert server.requests == []


@pytest.fixture
def tiny_disk(tmp_path):
    """A tmpfs of 256 KB at tmp_path/disk (root; skipped elsewhere), unmounted after the test."""
    folder = tmp_path / "disk"
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_is_said_to_be_one_and_the_part_dropped(env, tmp_path, capsys, tiny_disk):
    env(_entry("Full", b"x"))  # no size in the catalog, none told by the server: the disk fills while it writes
    with _RawServer("endless") as server:
        code, _, err = _cli(capsys, "fetch", "Full", "--mirror", server.url, "--to", tiny_disk)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"error: {tiny_disk / 'Full.tsv.part'}: the disk is full ("), err
    assert [p.name for p in tiny_disk.iterdir()] == [".Full.tsv.lock"]  # neither the part nor its meta


def test_a_file_the_disk_has_no_room_for_is_refused_before_writing(env, tmp_path, capsys, tiny_disk):
    data = os.urandom(400_000)
    env(_entry("Big", data))
    with FileServer({"/files/Big.tsv": data}) as server:  # it tells the size: refused before a byte is written
        code, _, err = _cli(capsys, "fetch", "Big", "--mirror", server.url, "--to", tiny_disk)
    assert code == 1 and f"{tiny_disk}: the disk is full for this file (400000 bytes to download" in err, err
    assert not (tiny_disk / "Big.tsv.part").exists()
