"""The catalog's leaderboard benchmarks (issue 37): the OpenVLM leaderboard's default set and RealWorldQA by
VLMEvalKit's names, URLs and MD5s (vlmeval/dataset/image_mcq.py, image_vqa.py, image_yorn.py at open-compass/
VLMEvalKit e8e78f05f3080fe28154f2130321f17951c3be94), each with its kind; LVLM-eHub's group on its VQA datasets; and
fetching one of them by name from a real HTTP server on 127.0.0.1 (tests/file_server.py), the built-in's URL path
kept through the mirror, nothing reaching the internet."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from db import catalog, open_workspace
from evaluator.analysis.groups import benchmark_groups
from evaluator.formats.importers.catalog import BUILTIN, entry_from_json
from tests.factories import png_bytes, write_tsv
from tests.file_server import FileServer
from vlmdesk.cli import main

# name -> (kind, URL file, MD5) as VLMEvalKit's dataset classes give them at the commit above
LEADERBOARD = {
    "MMMU_DEV_VAL": ("mcq", "VLMEval/MMMU_DEV_VAL.tsv", "585e8ad75e73f75dcad265dfd0417d64"),
    "MathVista_MINI": ("open", "VLMEval/MathVista_MINI.tsv", "f199b98e178e5a2a20e7048f5dcb0464"),
    "OCRBench": ("open", "VLMEval/OCRBench.tsv", "e953d98a987cc6e26ef717b61260b778"),
    "HallusionBench": ("open", "VLMEval/HallusionBench.tsv", "0c23ac0dc9ef46832d7a24504f2a0c7c"),
    "MMVet": ("open", "VLMEval/MMVet.tsv", "748aa6d4aa9d4de798306a63718455e3"),
    "RealWorldQA": ("mcq", "VLMEval/RealWorldQA.tsv", "4de008f55dc4fd008ca9e15321dc44b7"),
    "MMStar": ("mcq", "VLMEval/MMStar.tsv", "e1ecd2140806c1b1bbf54b43372efb9e"),
    "AI2D_TEST": ("mcq", "VLMEval/AI2D_TEST.tsv", "0f593e0d1c7df9a3d69bf1f947e71975"),
    "MMBench_DEV_EN_V11": ("mcq", "benchmarks/MMBench/MMBench_DEV_EN_V11.tsv", "30c05be8f2f347a50be25aa067248184"),
}
REASONING = (
    "TextVQA_VAL",
    "DocVQA_VAL",
    "OCRVQA_TEST",
    "OCRVQA_TESTCORE",
    "textvqa_val",
    "docvqa_val",
    "ok_vqa_val2014",
)


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("VLMDESK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VLMDESK_MIRROR", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("VLMDESK_CATALOG", raising=False)
    return tmp_path


def _cli(capsys, *args):
    capsys.readouterr()
    code = main([*map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fetch_list_names_each_leaderboard_benchmark_with_its_md5_kind_and_group(env, capsys):
    code, out, _ = _cli(capsys, "fetch", "--list", "--json")
    assert code == 0
    listed = {e["name"]: e for e in json.loads(out)}
    for name, (kind, path, md5) in LEADERBOARD.items():
        e = listed[name]
        assert (e["kind"], e["url"], e["checksum"]) == (
            kind,
            f"https://opencompass.openxlab.space/utils/{path}",
            f"md5:{md5}",
        ), name
        assert e["groups"] == [], name  # not LVLM-eHub benchmarks
    for name in REASONING:
        assert listed[name]["groups"] == ["reasoning"], name
    assert listed["POPE"]["kind"] == "yesno" and listed["InfoVQA_VAL"]["groups"] == []
    code, text, _ = _cli(capsys, "fetch", "--list")
    assert code == 0 and all(f"\n{name} " in text for name in LEADERBOARD)


def test_entries_parse_back_and_names_are_unique():
    names = [e.name for e in BUILTIN]
    assert len(names) == len(set(names))
    for entry in BUILTIN:  # what --list --json writes is a catalog file's entry, the kind included
        data = {k: v for k, v in entry.to_json().items() if v not in (None, [])}
        data.pop("checksum") if entry.layout == "lmms-lab" else None
        assert entry_from_json(data, "test") == entry
    data = {k: v for k, v in next(e for e in BUILTIN if e.name == "OCRBench").to_json().items() if v is not None}
    with pytest.raises(Exception, match=r"catalog\.json entry 3: kind: format vqa-tsv makes open benchmarks"):
        entry_from_json({**data, "kind": "mcq"}, "catalog.json entry 3")


def _ocrbench_tsv(tmp_path) -> bytes:
    rows = [
        {
            "index": n,
            "image": base64.b64encode(png_bytes((n * 40, 20, 20))).decode(),
            "question": f"what is written {n}?",
            "answer": repr([f"word{n}"]),
            "category": "Regular Text Recognition",
        }
        for n in range(3)
    ]
    return write_tsv(tmp_path / "src.tsv", rows, header=list(rows[0])).read_bytes()


def test_a_leaderboard_benchmark_is_fetched_by_its_builtin_url_and_checked_against_its_md5(env, capsys):
    """The built-in OCRBench entry, its URL's path served locally: bytes other than VLMEvalKit's file are refused
    by the published MD5; the same entry pinned to these bytes ($VLMDESK_CATALOG) imports as an open benchmark."""
    data = _ocrbench_tsv(env)
    builtin = next(e for e in BUILTIN if e.name == "OCRBench")
    path = "/" + builtin.url.split("/", 3)[3]
    ws = env / "w.sqlite"
    with FileServer({path: data}) as server:
        code, _, err = _cli(capsys, "fetch", "OCRBench", "--mirror", server.url)
        assert code == 1 and "e953d98a987cc6e26ef717b61260b778" in err  # the published MD5 named
        assert [r[0] for r in server.requests] == [path]
        pinned = {**builtin.to_json(), "checksum": f"md5:{hashlib.md5(data).hexdigest()}"}
        (env / "catalog.json").write_text(json.dumps([{k: v for k, v in pinned.items() if v not in (None, [])}]))
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VLMDESK_CATALOG", str(env / "catalog.json"))
            code, out, err = _cli(capsys, "--workspace", ws, "import", "OCRBench", "--mirror", server.url, "--json")
    assert code == 0, err
    assert (json.loads(out)["kind"], json.loads(out)["format"]) == ("open", "vqa-tsv")
    with open_workspace(ws) as w:
        bench = catalog.benchmark_by_name(w, "OCRBench")
        items = catalog.list_items(w, bench.id)
        assert [list(i.references) for i in items] == [["word0"], ["word1"], ["word2"]]
        assert benchmark_groups(bench) == ()
