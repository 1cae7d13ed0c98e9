"""`vlmdesk fetch NAME` and `vlmdesk import NAME` against a real HTTP server on 127.0.0.1 (tests/file_server.py):
progress, resume after a cut connection and after kill -9, a file changed on the server, checksum refusal, 404,
a stalling and a trickling server, the cache hit that moves no bytes, the hub layout, and the benchmark imported by
name equal to the same file imported by hand. Every URL is pointed at the local server through the mirror setting;
nothing reaches the internet."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from db import catalog, open_workspace
from evaluator.formats.importers.catalog import BUILTIN, VLMEVALKIT_COMMIT, entry_from_json
from tests.factories import HEADER, jpeg_bytes, mmbench_rows, png_bytes, write_tsv
from tests.file_server import FileServer
from vlmdesk.cli import main

REPO = Path(__file__).resolve().parents[2]


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _tsv_bytes(tmp_path: Path, n: int = 6, seed: int = 0) -> bytes:
    path = write_tsv(tmp_path / f"src{seed}.tsv", mmbench_rows(n, seed=seed, image_side=48), header=HEADER)
    return path.read_bytes()


def _pope_tsv_bytes(tmp_path: Path) -> bytes:
    """POPE.tsv as VLMEvalKit lays it out: each question once, `category` listing its settings, later questions of
    an image referring to the first row that holds it (by index)."""
    rows = []
    for n in range(12):
        image = n // 3
        settings = ["adversarial,popular,random", "popular", "random", "adversarial"][n % 4]
        rows.append(
            {
                "index": str(n + 1),
                "question": f"Is there a thing {n} in the image?",
                "answer": "Yes" if n % 2 else "No",
                "category": settings,
                "image": base64.b64encode(png_bytes((image * 50, 20, 200))).decode()
                if n % 3 == 0
                else str(n - n % 3 + 1),
                "image_source": f"COCO_val2014_{image:012d}",
            }
        )
    path = write_tsv(tmp_path / "pope_src.tsv", rows, header=list(rows[0]))
    return path.read_bytes()


def _entry(name: str, data: bytes, **kw) -> dict:
    return {
        "name": name,
        "layout": "vlmevalkit",
        "url": f"https://bench.example.invalid/files/{name}.tsv",
        "checksum": f"md5:{_md5(data)}",
        "title": f"{name} (a test file)",
        **kw,
    }


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The cache, the extra catalog and the workspace in tmp_path; returns a function writing the catalog."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("VLMDESK_CACHE_DIR", str(cache))
    monkeypatch.delenv("VLMDESK_MIRROR", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    catalog_file = tmp_path / "catalog.json"
    monkeypatch.setenv("VLMDESK_CATALOG", str(catalog_file))

    def write_catalog(*entries: dict) -> Path:
        catalog_file.write_text(json.dumps(list(entries)))
        return cache

    write_catalog()
    return write_catalog


def _files(folder: Path) -> list[str]:
    """What a folder holds but the hidden lock files fetches leave."""
    return [p.name for p in folder.iterdir() if not p.name.startswith(".")]


def _cli(capsys, *args):
    capsys.readouterr()
    code = main([*map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_catalog_lists_vlmevalkits_names_with_their_published_md5(env, capsys):
    code, out, _ = _cli(capsys, "fetch", "--list", "--json")
    assert code == 0
    listed = {e["name"]: e for e in json.loads(out)}
    for name in (
        "MMBench_DEV_EN",
        "MMBench_TEST_EN",
        "MMBench_DEV_CN",
        "MMBench_TEST_CN",
        "MMBench_DEV_EN_V11",
        "CCBench",
        "SEEDBench_IMG",
        "ScienceQA_TEST",
        "AI2D_TEST",
        "MMStar",
        "POPE",
        *VQA_NAMES,
    ):
        assert listed[name]["layout"] == "vlmevalkit" and listed[name]["checksum"].startswith("md5:"), name
    assert {listed[name]["format"] for name in VQA_NAMES} == {"vqa-tsv"}
    assert listed["TextVQA_VAL"]["checksum"] == "md5:b233b31f551bbf4056f2f955da3a92cd"
    assert listed["COCO_VAL"]["url"] == "https://opencompass.openxlab.space/utils/VLMEval/COCO_VAL.tsv"
    hub = ("textvqa_val", "docvqa_val", "infovqa_val", "chartqa", "coco2017_cap_val", "vqav2_val", "ok_vqa_val2014")
    assert {listed[name]["format"] for name in hub} == {"vqa-parquet"}
    assert (listed["docvqa_val"]["repo"], listed["docvqa_val"]["config"]) == ("lmms-lab/DocVQA", "DocVQA")
    assert listed["MMBench_DEV_EN"]["checksum"] == "md5:b6caf1133a01c6bb705cf753bb527ed8"
    assert listed["POPE"]["settings"] == ["random", "popular", "adversarial"]
    assert (
        listed["mmbench_en_dev"]["repo"] == "lmms-lab/MMBench"
        and listed["mmbench_en_dev"]["same_as"] == "MMBench_DEV_EN"
    )
    assert listed["pope_adv"]["split"] == "adversarial"
    assert len(VLMEVALKIT_COMMIT) == 40
    code, out, _ = _cli(capsys, "fetch", "--list")
    assert "MMBench_DEV_EN" in out and " ? " in out  # sizes VLMEvalKit does not publish
    # every built-in entry is one a catalog file could hold (the same rules at the door)
    for entry in BUILTIN:
        data = {k: v for k, v in entry.to_json().items() if v not in (None, [])}
        data.pop("checksum") if entry.layout == "lmms-lab" else None
        assert entry_from_json(data, "test") == entry


VQA_NAMES = ("TextVQA_VAL", "DocVQA_VAL", "InfoVQA_VAL", "ChartQA_TEST", "OCRVQA_TEST", "OCRVQA_TESTCORE", "COCO_VAL")


def test_a_vqa_benchmark_by_name_is_an_open_benchmark_with_its_reference_answers(env, tmp_path, capsys):
    """TextVQA_VAL by name (its catalog entry pointed at a test file through $VLMDESK_CATALOG, the URL path kept
    and served locally): VLMEvalKit's layout, the answer lists becoming each item's references."""
    answers = [["nokia"] * 7 + ["nokia phone", "unanswerable", "NOKIA"], ["诺基亚", "诺基亚"]]
    rows = [
        {"index": n, "image": base64.b64encode(jpeg_bytes(n, side=24)).decode(), "question": f"q{n}?", "answer": str(a)}
        for n, a in enumerate(answers)
    ]
    data = write_tsv(tmp_path / "t.tsv", rows, header=["index", "image", "question", "answer"]).read_bytes()
    builtin = next(e for e in BUILTIN if e.name == "TextVQA_VAL")
    env({**_entry("TextVQA_VAL", data, format="vqa-tsv"), "url": builtin.url})
    path = "/" + builtin.url.split("/", 3)[3]
    ws = tmp_path / "w.sqlite"
    with FileServer({path: data}) as server:
        code, out, err = _cli(capsys, "--workspace", ws, "import", "TextVQA_VAL", "--mirror", server.url, "--json")
    assert code == 0, err
    assert (json.loads(out)["kind"], json.loads(out)["format"]) == ("open", "vqa-tsv")
    with open_workspace(ws) as w:
        items = catalog.list_items(w, catalog.benchmark_by_name(w, "TextVQA_VAL").id)
    assert [list(i.references) for i in items] == answers


def test_resume_after_a_cut_connection_then_a_cache_hit_that_moves_no_bytes(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 8)
    cache = env(_entry("Tiny_DEV", data))
    path = "/files/Tiny_DEV.tsv"
    with FileServer({path: data}) as server:
        server.faults[path].append(("cut", 5000))
        code, out, err = _cli(capsys, "fetch", "Tiny_DEV", "--mirror", server.url, "--json-progress")
        assert code == 1 and err.count("\n") == 1, err
        assert f"{server.url}{path}:" in err and "run the fetch again to resume" in err
        part = cache / "Tiny_DEV.tsv.part"
        assert part.stat().st_size == 5000 and not (cache / "Tiny_DEV.tsv").exists()
        events = [json.loads(line) for line in out.splitlines()]
        assert events[0]["event"] == "fetch_start" and events[0]["bytes_total"] == len(data)

        code, out, err = _cli(capsys, "fetch", "Tiny_DEV", "--mirror", server.url, "--json-progress")
        assert code == 0, err
        events = [json.loads(line) for line in out.splitlines()]
        assert events[0]["resume_from"] == 5000
        assert any(e["event"] == "fetch_progress" and e["bytes_done"] == len(data) for e in events)
        assert events[-1] == {
            "event": "fetch_done",
            "name": "Tiny_DEV",
            "path": str(cache / "Tiny_DEV.tsv"),
            "files": 1,
            "bytes_moved": len(data) - 5000,
            "cached": False,
            "resumed": True,
        }
        assert server.requests[-1][1:] == ("bytes=5000-", server.requests[-1][2]) and server.requests[-1][2]
        assert server.sent[path] == len(data)  # 5000 + the rest: nothing sent twice
        assert (cache / "Tiny_DEV.tsv").read_bytes() == data and not part.exists()

        requests = len(server.requests)
        code, out, err = _cli(capsys, "fetch", "Tiny_DEV", "--mirror", server.url, "--json")
        assert code == 0 and json.loads(out)["cached"] and json.loads(out)["bytes_moved"] == 0
        assert len(server.requests) == requests and server.sent[path] == len(data)  # no request at all


def test_a_file_changed_on_the_server_restarts_instead_of_splicing(env, tmp_path, capsys):
    old, new = _tsv_bytes(tmp_path, 6, seed=1), _tsv_bytes(tmp_path, 6, seed=2)
    cache = env(_entry("Changing", old))
    path = "/files/Changing.tsv"
    with FileServer({path: old}) as server:
        server.faults[path].append(("cut", 3000))
        assert _cli(capsys, "fetch", "Changing", "--mirror", server.url)[0] == 1
        server.files[path] = new  # another version on the server (another ETag); the catalog still names the old
        code, _, err = _cli(capsys, "fetch", "Changing", "--mirror", server.url)
        assert server.requests[-1][1] == "bytes=3000-" and server.requests[-1][2]  # If-Range: the old ETag
        assert server.sent[path] == 3000 + len(new)  # 200: the whole new file, never the old prefix + a new tail
        assert code == 1 and "checksum mismatch" in err  # ... which is not the file the catalog names
        assert not _files(cache)

        server.faults[path].append(("cut", 3000))
        assert _cli(capsys, "fetch", "Changing", "--mirror", server.url)[0] == 1
        env(_entry("Changing", new))  # the catalog now names the new file: the part of another one is not resumed
        code, _, err = _cli(capsys, "fetch", "Changing", "--mirror", server.url)
        assert code == 0 and server.requests[-1][1] is None, err
        assert (cache / "Changing.tsv").read_bytes() == new


def test_a_wrong_checksum_is_refused_and_nothing_imported(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 4)
    cache = env(_entry("Wrong", data, checksum="md5:" + "0" * 32))
    ws = tmp_path / "w.sqlite"
    with FileServer({"/files/Wrong.tsv": data}) as server:
        code, _, err = _cli(capsys, "--workspace", ws, "import", "Wrong", "--mirror", server.url)
    assert code == 1 and err.count("\n") == 1
    assert f"checksum mismatch: expected md5 {'0' * 32}, got {_md5(data)}" in err
    assert f"put the file there by hand: {cache / 'Wrong.tsv'}" in err
    assert not _files(cache)  # neither the file nor its part (the lock aside)
    assert not ws.exists()  # the workspace was never opened: nothing imported


def test_404_refused_and_offline_say_where_to_put_the_file(env, tmp_path, capsys, monkeypatch):
    cache = env(_entry("Missing", b"x"))
    with FileServer({}) as server:
        code, _, err = _cli(capsys, "fetch", "Missing", "--mirror", server.url)
        assert code == 1
        assert err == (
            f"error: {server.url}/files/Missing.tsv: HTTP 404 not found; put the file there by hand: "
            f"{cache / 'Missing.tsv'} (then: vlmdesk import Missing)\n"
        )
        server.faults["/files/Missing.tsv"].append(("status", 403))
        code, _, err = _cli(capsys, "fetch", "Missing", "--mirror", server.url)
        assert code == 1 and "HTTP 403 refused" in err
        port = server.url.rsplit(":", 1)[1]
    monkeypatch.setenv("VLMDESK_MIRROR", f"http://127.0.0.1:{port}")  # the server is gone: connection refused
    code, _, err = _cli(capsys, "fetch", "Missing")
    assert code == 1 and "cannot connect (offline, or refused" in err and "put the file there by hand" in err
    code, _, err = _cli(capsys, "fetch", "Nope")
    assert code == 2 and "no benchmark named 'Nope' in the catalog" in err
    code, _, err = _cli(capsys, "--workspace", tmp_path / "w.sqlite", "import", "MMBench_DEV_XX")
    assert (
        code == 2
        and err == "error: MMBench_DEV_XX: no such file, nor a benchmark in the catalog (vlmdesk fetch --list)\n"
    )
    assert not (tmp_path / "w.sqlite").exists()


def test_a_stalling_server_times_out_and_a_trickling_one_meets_the_deadline(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 4)
    cache = env(_entry("Slow", data))
    path = "/files/Slow.tsv"
    with FileServer({path: data}) as server:
        server.faults[path].append(("stall", 1000))
        started = time.monotonic()
        code, _, err = _cli(capsys, "fetch", "Slow", "--mirror", server.url, "--idle-timeout", "0.5")
        assert code == 1 and "stalled (no data for 0.5 s)" in err and time.monotonic() - started < 5
        assert (cache / "Slow.tsv.part").stat().st_size == 1000  # kept for the resume

        server.faults[path].append(("trickle", 0.02))  # a byte every 20 ms: never idle, never done
        started = time.monotonic()
        code, _, err = _cli(capsys, "fetch", "Slow", "--mirror", server.url, "--timeout", "1", "--idle-timeout", "5")
        assert code == 1 and "past the deadline (--timeout)" in err, err
        assert time.monotonic() - started < 4
        code, _, err = _cli(capsys, "fetch", "Slow", "--mirror", server.url)
        assert code == 0, err  # and what the two left is resumed
        assert (cache / "Slow.tsv").read_bytes() == data


def test_a_file_larger_than_the_catalog_says_and_a_redirect_loop_are_refused(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 4)
    env(_entry("Big", data, size=1000))
    with FileServer({"/files/Big.tsv": data}) as server:
        code, _, err = _cli(capsys, "fetch", "Big", "--mirror", server.url)
        assert code == 1 and f"{len(data)} bytes; at most 1101 expected" in err
        server.faults["/files/Big.tsv"] += [("redirect", 0)] * 10
        code, _, err = _cli(capsys, "fetch", "Big", "--mirror", server.url)
        assert code == 1 and "more than 5 redirects" in err
        assert len(server.requests) == 1 + 6


def test_two_fetches_of_one_file_at_once_do_not_write_into_the_same_part(env, tmp_path, capsys):
    import fcntl

    data = _tsv_bytes(tmp_path, 4)
    cache = env(_entry("Busy", data))
    cache.mkdir(parents=True)
    with open(cache / ".Busy.tsv.lock", "a+b") as lock, FileServer({"/files/Busy.tsv": data}) as server:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # what another fetch of it holds
        code, _, err = _cli(capsys, "fetch", "Busy", "--mirror", server.url)
        assert code == 1 and "another vlmdesk fetch is downloading" in err and not server.requests
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        assert _cli(capsys, "fetch", "Busy", "--mirror", server.url)[0] == 0


def test_imported_by_name_equals_the_file_imported_by_hand(env, tmp_path, capsys):
    data = _tsv_bytes(tmp_path, 10)
    cache = env(_entry("Tiny_DEV", data))
    by_name, by_hand = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with FileServer({"/files/Tiny_DEV.tsv": data}) as server:
        code, out, err = _cli(capsys, "--workspace", by_name, "import", "Tiny_DEV", "--mirror", server.url, "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "Tiny_DEV" and json.loads(out)["questions"] == 10
    hand = tmp_path / "hand" / "Tiny_DEV.tsv"
    hand.parent.mkdir()
    hand.write_bytes(data)
    assert _cli(capsys, "--workspace", by_hand, "import", hand, "--name", "Tiny_DEV")[0] == 0
    items = [_cli(capsys, "--workspace", ws, "items", "Tiny_DEV", "--json")[1] for ws in (by_name, by_hand)]
    assert items[0] == items[1] and len(json.loads(items[0])) == 10
    # again by name: the cache, no download, and the benchmark is already there
    code, out, err = _cli(capsys, "--workspace", by_name, "import", "Tiny_DEV", "--json")
    assert code == 0 and json.loads(out)["already_imported"], err
    assert (cache / "Tiny_DEV.tsv").is_file()
    code, _, err = _cli(capsys, "--workspace", by_name, "import", "Tiny_DEV", "--setting", "random")
    assert code == 2 and "Tiny_DEV has no POPE setting 'random'" in err
    code, _, err = _cli(capsys, "--workspace", by_name, "import", "Tiny_DEV", "--format", "jsonl")
    assert code == 2 and "leave out --format" in err


def test_pope_by_name_is_one_benchmark_per_setting_as_by_hand(env, tmp_path, capsys):
    data = _pope_tsv_bytes(tmp_path)
    env(_entry("POPE_TEST", data, format="pope-tsv", settings=["random", "popular", "adversarial"]))
    ws, hand_ws = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with FileServer({"/files/POPE_TEST.tsv": data}) as server:
        code, out, err = _cli(capsys, "--workspace", ws, "import", "POPE_TEST", "--mirror", server.url, "--json")
    assert code == 0, err
    reports = {r["name"]: r for r in json.loads(out)}
    # rows by category (n % 4): 0 all three, 1 popular, 2 random, 3 adversarial
    assert {k: v["questions"] for k, v in reports.items()} == {
        "POPE_TEST_random": 6,
        "POPE_TEST_popular": 6,
        "POPE_TEST_adversarial": 6,
    }
    code, out, _ = _cli(capsys, "--workspace", ws, "benchmarks", "--json")
    assert {b["name"]: b["setting"] for b in json.loads(out)} == {
        "POPE_TEST_random": "random",
        "POPE_TEST_popular": "popular",
        "POPE_TEST_adversarial": "adversarial",
    }
    hand = tmp_path / "POPE_TEST.tsv"
    hand.write_bytes(data)
    code, _, err = _cli(capsys, "--workspace", hand_ws, "import", hand)
    assert code == 2 and "several POPE settings" in err and "--setting" in err
    code, _, err = _cli(
        capsys, "--workspace", hand_ws, "import", hand, "--setting", "popular", "--name", "POPE_TEST_popular"
    )
    assert code == 0, err
    items = [_cli(capsys, "--workspace", w, "items", "POPE_TEST_popular", "--json")[1] for w in (ws, hand_ws)]
    assert items[0] == items[1]
    shown = json.loads(items[0])
    assert [i["index"] for i in shown] == [1, 2, 5, 6, 9, 10] and all(i["image_sha256"] for i in shown)
    assert shown[0]["answer"] == "no" and shown[1]["answer"] == "yes"


def _hub_tree(repo: str, shards: dict[str, bytes]) -> str:
    return json.dumps(
        [{"type": "directory", "path": "en/extra", "oid": "0" * 40, "size": 0}]
        + [
            {
                "type": "file",
                "path": p,
                "oid": "1" * 40,
                "size": len(b),
                "lfs": {"oid": hashlib.sha256(b).hexdigest(), "size": len(b), "pointerSize": 134},
            }
            for p, b in shards.items()
        ]
    )


def _parquet_bytes(tmp_path: Path, rows: list[dict], name: str) -> bytes:
    path = tmp_path / name
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=8)
    return path.read_bytes()


def test_the_hub_layout_checks_each_shard_against_the_hubs_sha256(env, tmp_path, capsys, monkeypatch):
    from tests.evaluator.test_parquet import mmbench_rows as hub_rows

    rows = hub_rows(9)
    shards = {
        "en/dev-00000-of-00002-abc.parquet": _parquet_bytes(tmp_path, rows[:15], "s0.parquet"),
        "en/dev-00001-of-00002-def.parquet": _parquet_bytes(tmp_path, rows[15:], "s1.parquet"),
        "en/test-00000-of-00001.parquet": b"not this split",
    }
    cache = env({"name": "hub_dev", "layout": "lmms-lab", "repo": "lmms-lab/MMBench", "config": "en", "split": "dev"})
    files = {f"/datasets/lmms-lab/MMBench/resolve/main/{p}": b for p, b in shards.items()}
    files["/api/datasets/lmms-lab/MMBench/tree/main/en"] = _hub_tree("lmms-lab/MMBench", shards).encode()
    ws = tmp_path / "w.sqlite"
    with FileServer(files) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)  # as huggingface_hub reads it
        monkeypatch.setenv("HF_TOKEN", "hf_test_token")  # gated repositories: sent to huggingface.co only
        code, out, err = _cli(capsys, "--workspace", ws, "import", "hub_dev", "--json")
        assert code == 0, err
        assert json.loads(out)["questions"] == 9 and json.loads(out)["rows_folded"] > 0
        assert sorted(p.name for p in (cache / "hub_dev").glob("*.parquet")) == [
            "dev-00000-of-00002.parquet",
            "dev-00001-of-00002.parquet",
        ]
        assert set(server.authorization) == {None} and "hf_test_token" not in out + err  # HF_ENDPOINT: another host
        sent = server.total_sent()
        code, out, err = _cli(capsys, "fetch", "hub_dev", "--json")
        assert code == 0 and json.loads(out)["cached"] and server.total_sent() == sent

        # a shard that is not what the hub's SHA-256 says: refused, removed
        (cache / "hub_dev" / "dev-00001-of-00002.parquet").write_bytes(b"damaged")
        server.files["/datasets/lmms-lab/MMBench/resolve/main/en/dev-00001-of-00002-def.parquet"] = b"tampered"
        code, _, err = _cli(capsys, "fetch", "hub_dev")
        assert code == 1 and "checksum mismatch: expected sha256" in err
        assert not (cache / "hub_dev" / "dev-00001-of-00002.parquet.part").exists()


def test_textvqa_val_by_name_from_the_hub_is_open_with_the_ids_lmms_eval_samples_name(
    env, tmp_path, capsys, monkeypatch
):
    """The built-in textvqa_val entry (lmms-lab/textvqa, data/validation-*), served by a local hub: its shards import
    as one open benchmark indexed by question_id, each item with its ten answers."""
    from tests.evaluator.test_open_layouts import _hub_layouts

    records, schema, indexes, references = _hub_layouts()["textvqa"]
    shards = {}
    for n, record in enumerate(records):
        path = tmp_path / f"s{n}.parquet"
        pq.write_table(pa.Table.from_pylist([record], schema=schema), path)
        shards[f"data/validation-0000{n}-of-00002.parquet"] = path.read_bytes()
    files = {f"/datasets/lmms-lab/textvqa/resolve/main/{p}": b for p, b in shards.items()}
    files["/api/datasets/lmms-lab/textvqa/tree/main/data"] = _hub_tree("lmms-lab/textvqa", shards).encode()
    ws = tmp_path / "w.sqlite"
    with FileServer(files) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        code, out, err = _cli(capsys, "--workspace", ws, "import", "textvqa_val", "--json")
    assert code == 0, err
    assert (json.loads(out)["kind"], json.loads(out)["format"]) == ("open", "vqa-parquet")
    with open_workspace(ws) as w:
        items = catalog.list_items(w, catalog.benchmark_by_name(w, "textvqa_val").id)
    assert [(i.index, list(i.references)) for i in items] == list(zip(indexes, references))


def test_a_bad_catalog_file_is_refused_at_the_door(env, tmp_path, capsys):
    env({"name": "x y", "url": "https://h/x.tsv", "checksum": "md5:" + "0" * 32})
    code, _, err = _cli(capsys, "fetch", "--list")
    assert code == 2 and "entry 1: name:" in err and err.count("\n") == 1
    env({"name": "ok", "url": "https://h/x.tsv"})
    code, _, err = _cli(capsys, "fetch", "--list")
    assert code == 2 and "checksum: missing" in err
    env({"name": "ok", "url": "https://h/x.tsv", "checksum": "md5:abc", "extra": 1})
    assert "extra: unknown field" in _cli(capsys, "fetch", "--list")[2]


def test_resume_after_kill_9_of_a_fetch_process(env, tmp_path, capsys):
    data = jpeg_bytes(7, 400) * 4  # incompressible, ~0.5 MB
    cache = env(
        {
            "name": "Killed",
            "url": "https://bench.example.invalid/files/Killed.tsv",
            "checksum": f"sha256:{hashlib.sha256(data).hexdigest()}",
        }
    )
    path = "/files/Killed.tsv"
    part = cache / "Killed.tsv.part"
    with FileServer({path: data}) as server:
        server.faults[path].append(("stall", 200_000))  # sends 200 KB, then holds the connection open
        proc = subprocess.Popen(
            [sys.executable, "-m", "vlmdesk", "fetch", "Killed", "--mirror", server.url, "--json-progress"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (part.exists() and part.stat().st_size >= 150_000):
                time.sleep(0.05)
            first = json.loads(proc.stdout.readline())
            assert first["event"] == "fetch_start" and first["bytes_total"] == len(data)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            proc.stdout.close()
            proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        have = part.stat().st_size
        assert 0 < have <= 200_000 and data.startswith(part.read_bytes())
        code, out, err = _cli(capsys, "fetch", "Killed", "--mirror", server.url, "--json")
        assert code == 0, err
        assert json.loads(out)["resumed"] and json.loads(out)["bytes_moved"] == len(data) - have
        assert server.requests[-1][1] == f"bytes={have}-"
    assert (cache / "Killed.tsv").read_bytes() == data


def test_a_file_put_in_the_cache_by_hand_is_checked_and_used_offline(env, tmp_path, capsys, monkeypatch):
    data = _tsv_bytes(tmp_path, 3)
    entry = _entry("Hand_DEV", data, url="https://bench.example.invalid/files/mmbench_dev_20231003.tsv")
    cache = env(entry, {**entry, "name": "Hand_TEST", "checksum": "md5:" + "1" * 32})
    monkeypatch.setenv("VLMDESK_MIRROR", "http://127.0.0.1:9")  # nothing listens there: offline
    code, _, err = _cli(capsys, "fetch", "Hand_DEV")
    assert code == 1 and f"put the file there by hand: {cache / 'Hand_DEV.tsv'}" in err  # NAME.tsv, as VLMEvalKit
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "Hand_DEV.tsv").write_bytes(data)
    code, out, err = _cli(capsys, "fetch", "Hand_DEV", "--json")
    assert code == 0 and json.loads(out)["cached"], err
    (cache / "Hand_TEST.tsv").write_bytes(data)  # not the file its entry names: not used
    code, _, err = _cli(capsys, "fetch", "Hand_TEST")
    assert code == 1 and "cannot connect" in err
