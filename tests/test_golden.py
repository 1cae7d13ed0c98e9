"""Golden outputs: what the `vlmdesk` command prints and writes today, compared byte for byte.

The real command runs in child processes (this checkout first on PYTHONPATH) on one workspace holding the bundled
demo (`vlmdesk demo`) and a small MMBench-style TSV (tests/data/golden/inputs/mmbench_small.tsv, made by
tests/factories.py, see `write_small_tsv`), and `pope score` runs on POPE's real question slices (tests/data/pope).
Covered: `import --json`, `benchmarks --json`, `items --json`, `report --json` (baseline:random and baseline:first,
circular and vanilla, a --full-passes run, a POPE run), `pope score --json` (official and strict, one setting and
three), `export-predictions`, `qc consensus --json` and `qc export` (after QC decisions and reviews merged from
files with fixed ids and times, and decisions made with `qc decide`). Every output is a file in
tests/data/golden/ named after the command; image folders are compared as a listing of names, sizes and SHA-256.

Only these parts are normalised before the comparison: the values of VOLATILE_FIELDS stamped while the test runs
become "<volatile>" (the fixed times of the merged records are kept), the temporary directory and the repository
root in paths become <tmp> and <repo>, and base64 images inline in a TSV become their digest. Everything else (key
order, spacing, float digits, row order, line ends) must match exactly.

Regenerate after an intended change of output, then review `git diff tests/data/golden` before committing:

    VLMDESK_REGEN_GOLDEN=1 pytest tests/test_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"
INPUTS = GOLDEN / "inputs"
POPE = ROOT / "tests" / "data" / "pope"
REGEN = os.environ.get("VLMDESK_REGEN_GOLDEN") == "1"

# Times stamped while the test runs (later than its start); the fixed times of merged records stay as they are.
VOLATILE_FIELDS = ("imported_at", "created_at", "finished_at", "exported_at", "decided_at")
_VOLATILE = re.compile(r'"(' + "|".join(VOLATILE_FIELDS) + r')": "((?:[^"\\]|\\.)*)"')
# An image written inline (base64 in a TSV cell) is compared by its digest: the demo's photos would weigh 600 KB.
_BASE64 = re.compile(r"(?<=[\t\n\"])[A-Za-z0-9+/]{200,}={0,2}(?=[\t\n\"])")

# Answers that real models give, some read differently by the official and the strict parser ("NO" -> yes).
PHRASES = [
    "Yes, there is.",
    "No.",
    "NO",
    "No!",
    "not at all",
    "There is no dog",
    "yes",
    "I think not",
    "",
    "Yes",
    "No, there is not.",
    "no",
    "Nope",
    "It is not present.",
    "Yes!",
    "I don't see one.",
    "Certainly",
    "maybe",
]
POPE_SLICES = {
    "random": "coco_pope_random.json",
    "popular": "coco_pope_popular.json",
    "adversarial": "coco_pope_adversarial.json",
}

# Records merged with `reviews import` / `qc import-decisions`: fixed ids and times, so nothing in them is volatile.
REVIEWS = [
    {
        "id": "00000000-0000-4000-8000-000000000001",
        "benchmark": "demo",
        "index": 5,
        "annotator": "ana",
        "verdict": "wrong_answer",
        "answer": "B",
        "note": "the key is off",
        "seconds": 4.5,
        "at": "2026-01-02T10:00:00Z",
    },
    # QC corrects item 2 to A: two sources correcting differently apply neither (not_applied).
    {
        "id": "00000000-0000-4000-8000-000000000007",
        "benchmark": "demo",
        "index": 2,
        "annotator": "ben",
        "verdict": "wrong_answer",
        "answer": "C",
        "at": "2026-01-02T10:06:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000002",
        "benchmark": "demo",
        "index": 6,
        "annotator": "ana",
        "verdict": "ambiguous",
        "at": "2026-01-02T10:01:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000003",
        "benchmark": "demo",
        "index": 7,
        "annotator": "ana",
        "verdict": "bad_image",
        "at": "2026-01-02T10:02:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000004",
        "benchmark": "demo",
        "index": 7,
        "annotator": "ana",
        "verdict": "undo",
        "withdraws": "00000000-0000-4000-8000-000000000003",
        "at": "2026-01-02T10:03:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000005",
        "benchmark": "demo",
        "index": 8,
        "annotator": "ana",
        "verdict": "ok",
        "at": "2026-01-02T10:04:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000006",
        "benchmark": "demo",
        "index": 8,
        "annotator": "ben",
        "verdict": "text_answerable",
        "at": "2026-01-02T10:05:00Z",
    },
]
DECISIONS = [
    {
        "id": "00000000-0000-4000-8000-000000000011",
        "benchmark": "demo",
        "index": 1,
        "stage": "consensus",
        "annotator": "ana",
        "decision": "confirm",
        "reason": "ambiguous",
        "note": "B and C both fit",
        "at": "2026-01-03T09:00:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000012",
        "benchmark": "demo",
        "index": 2,
        "stage": "consensus",
        "annotator": "ana",
        "decision": "confirm",
        "reason": "wrong_answer",
        "answer": "A",
        "old_answer": "B",
        "at": "2026-01-03T09:01:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000013",
        "benchmark": "demo",
        "index": 3,
        "stage": "consensus",
        "annotator": "ana",
        "decision": "reject",
        "at": "2026-01-03T09:02:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000014",
        "benchmark": "demo",
        "index": 4,
        "stage": "consensus",
        "annotator": "ana",
        "decision": "confirm",
        "reason": "bad_image",
        "at": "2026-01-03T09:03:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000015",
        "benchmark": "demo",
        "index": 4,
        "stage": "consensus",
        "annotator": "ben",
        "decision": "reject",
        "at": "2026-01-03T09:04:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000016",
        "benchmark": "demo",
        "index": 9,
        "stage": "consensus",
        "annotator": "ana",
        "decision": "confirm",
        "reason": "other",
        "at": "2026-01-03T09:05:00Z",
    },
    {
        "id": "00000000-0000-4000-8000-000000000017",
        "benchmark": "demo",
        "index": 9,
        "stage": "consensus",
        "annotator": "ana",
        "decision": "undo",
        "withdraws": "00000000-0000-4000-8000-000000000016",
        "at": "2026-01-03T09:06:00Z",
    },
]


def write_small_tsv(path: Path) -> Path:
    """The generated benchmark: 8 questions with 2-4 options and their circular copies, one Chinese question."""
    from tests.factories import mmbench_rows, write_tsv

    rows = list(mmbench_rows(8, seed=13, image_side=24))
    for row in rows:
        if int(row["index"]) % 1_000_000 == 5:
            row["question"] = "图中的物体是什么颜色？"
    return write_tsv(path, rows)


def normalise(data: bytes, tmp: Path, started: str) -> bytes:
    text = data.decode("utf-8")
    text = _VOLATILE.sub(lambda m: f'"{m.group(1)}": "<volatile>"' if m.group(2) >= started else m.group(0), text)
    text = _BASE64.sub(lambda m: f"<base64 sha256:{hashlib.sha256(m.group(0).encode()).hexdigest()}>", text)
    for path, name in sorted([(str(tmp), "<tmp>"), (str(ROOT), "<repo>")], key=lambda p: -len(p[0])):
        text = text.replace(path, name)
    return text.encode("utf-8")


class Vlmdesk:
    """The real command on one workspace; `save` keeps what it printed as a golden output."""

    def __init__(self, tmp: Path):
        self.tmp, self.out, self.ws = tmp, tmp / "out", tmp / "ws.sqlite"
        self.out.mkdir()
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "PYTHONIOENCODING": "utf-8",
            "VLMDESK_ANNOTATOR": "golden",
            "VLMDESK_WORKSPACE": str(self.ws),
        }

    def __call__(self, *args, save: str | None = None) -> str:
        argv = [sys.executable, "-m", "vlmdesk", "--workspace", str(self.ws), *map(str, args)]
        done = subprocess.run(argv, capture_output=True, env=self.env, cwd=self.tmp, timeout=300)
        assert done.returncode == 0, (args, done.stderr.decode(errors="replace"))
        if save:
            (self.out / save).write_bytes(done.stdout)
        return done.stdout.decode("utf-8")

    def run(self, *args, expect_id: int) -> None:
        assert json.loads(self(*args, "--json")) == {"run_id": expect_id}


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def pope_answers(path: Path, questions: Path, shift: int, *, with_ids: bool = False) -> Path:
    text = questions.read_text()
    records = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines()]
    answers = [{"answer": PHRASES[(i * 7 + shift) % len(PHRASES)]} for i in range(len(records))]
    if with_ids:  # ids restore the pairing of answers given in another order
        answers = [{"question_id": q["question_id"], "text": a["answer"]} for q, a in zip(records, answers)]
        answers = answers[1::2] + answers[::2]
    return write_jsonl(path, answers)


def image_listing(folder: Path) -> bytes:
    rows = [
        f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.stat().st_size:>8}  {f.name}\n"
        for f in sorted(folder.iterdir())
    ]
    return "".join(rows).encode()


def produce(vd: Vlmdesk) -> None:
    """Every command whose output is kept, in one workspace; run ids follow the order of the runs."""
    tmp, out = vd.tmp, vd.out
    tsv = INPUTS / "mmbench_small.tsv"
    vd("demo")
    vd("import", tsv, "--name", "mmbench-small", "--json", save="import-mmbench-small.json")
    vd("benchmarks", "--json", save="benchmarks.json")
    for bench in ("demo", "demo-pope", "mmbench-small"):
        vd("items", bench, "--json", save=f"items-{bench}.json")

    runs = [
        ("demo", "random", "circular"),
        ("demo", "random", "vanilla"),
        ("demo", "first", "circular"),
        ("demo", "first", "vanilla"),
        ("demo-pope", "random", "pope"),
        ("mmbench-small", "random", "circular"),
        ("mmbench-small", "random", "vanilla"),
        ("mmbench-small", "first", "circular"),
        ("mmbench-small", "first", "vanilla"),
    ]
    for run_id, (bench, kind, strategy) in enumerate(runs, 1):
        vd.run(
            "run",
            "--bench",
            bench,
            "--model",
            f"baseline:{kind}",
            *(["--strategy", "vanilla"] if strategy == "vanilla" else []),
            expect_id=run_id,
        )
        vd("report", run_id, "--json", save=f"report-{run_id}-{bench}-{kind}-{strategy}.json")
    vd.run(
        "run", "--bench", "mmbench-small", "--model", "baseline:random", "--seed", "7", "--full-passes", expect_id=10
    )
    vd("report", 10, "--json", save="report-10-mmbench-small-random-full-passes.json")
    vd("report", 1, 3, "--json", save="report-1-3.json")

    exports = [
        (1, "export-predictions-1.tsv", ()),
        (4, "export-predictions-4.csv", ("--prediction", "choice")),
        (5, "export-predictions-5.tsv", ()),
        (6, "export-predictions-6.tsv", ()),
        (10, "export-predictions-10.tsv", ()),
    ]
    for run_id, name, extra in exports:
        vd("export-predictions", run_id, "--out", out / name, *extra, "--json", save=f"{name}.json")

    vd("qc", "consensus", "--bench", "demo", "--run", 1, "--run", 3, "--json", save="qc-consensus-demo.json")
    vd("qc", "import-decisions", write_jsonl(tmp / "decisions.jsonl", DECISIONS))
    vd("reviews", "import", write_jsonl(tmp / "reviews.jsonl", REVIEWS))
    vd("qc", "export", "demo", "--out", out / "qc-export-demo.jsonl", "--json", save="qc-export-demo.json")
    vd(
        "qc",
        "export",
        "demo",
        "--out",
        out / "qc-export-demo-reviews.jsonl",
        "--with-reviews",
        "--json",
        save="qc-export-demo-reviews.json",
    )
    vd(
        "qc",
        "export",
        "demo",
        "--out",
        out / "qc-export-demo.tsv",
        "--format",
        "mmbench-tsv",
        "--json",
        save="qc-export-demo-tsv.json",
    )
    vd(
        "qc",
        "export",
        "demo-pope",
        "--out",
        out / "qc-export-demo-pope.jsonl",
        "--json",
        save="qc-export-demo-pope.json",
    )

    vd(
        "qc",
        "consensus",
        "--bench",
        "mmbench-small",
        "--run",
        6,
        "--run",
        8,
        "--json",
        save="qc-consensus-mmbench-small.json",
    )
    flagged = json.loads((out / "qc-consensus-mmbench-small.json").read_text())["candidates"]
    keys = {item["index"]: item["answer"] for item in json.loads((out / "items-mmbench-small.json").read_text())}
    vd("qc", "decide", "mmbench-small", flagged[0], "--confirm", "--reason", "ambiguous", "--annotator", "ana")
    vd(
        "qc",
        "decide",
        "mmbench-small",
        flagged[1],
        "--confirm",
        "--answer",
        "B" if keys[flagged[1]] == "A" else "A",
        "--annotator",
        "ana",
    )
    vd("qc", "decide", "mmbench-small", flagged[2], "--reject", "--annotator", "ana")
    vd(
        "qc",
        "export",
        "mmbench-small",
        "--out",
        out / "qc-export-mmbench-small.tsv",
        "--json",
        save="qc-export-mmbench-small.json",
    )

    official = []
    for setting, name in POPE_SLICES.items():
        official += [
            "--questions",
            POPE / name,
            "--answers",
            pope_answers(tmp / f"{setting}.answers.jsonl", POPE / name, len(official)),
        ]
    vd("pope", "score", *official, "--parser", "official", "--json", save="pope-score-coco-official.json")
    vd("pope", "score", *official, "--parser", "strict", "--json", save="pope-score-coco-strict.json")
    gqa = POPE / "gqa_pope_seem_random.json"
    gqa_answers = pope_answers(tmp / "gqa.answers.jsonl", gqa, 3)
    vd(
        "pope",
        "score",
        "--questions",
        gqa,
        "--answers",
        gqa_answers,
        "--parser",
        "official",
        "--json",
        save="pope-score-gqa-official.json",
    )
    vd("pope", "score", "--questions", gqa, "--answers", gqa_answers, "--json", save="pope-score-gqa-strict.json")
    shuffled = pope_answers(tmp / "shuffled.answers.jsonl", POPE / POPE_SLICES["random"], 5, with_ids=True)
    vd(
        "pope",
        "score",
        "--questions",
        POPE / POPE_SLICES["random"],
        "--answers",
        shuffled,
        "--json",
        save="pope-score-random-by-id.json",
    )

    for folder in [p for p in out.iterdir() if p.is_dir()]:
        (out / f"{folder.name}.sha256").write_bytes(image_listing(folder))
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


def golden_names() -> list[str]:
    return sorted(p.name for p in GOLDEN.iterdir() if p.is_file()) if GOLDEN.is_dir() else []


@pytest.fixture(scope="module")
def produced(tmp_path_factory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("golden")
    if REGEN and not (INPUTS / "mmbench_small.tsv").exists():
        INPUTS.mkdir(parents=True, exist_ok=True)
        write_small_tsv(INPUTS / "mmbench_small.tsv")
    started = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="milliseconds")
    vd = Vlmdesk(tmp)
    produce(vd)
    outputs = {p.name: normalise(p.read_bytes(), tmp, started) for p in sorted(vd.out.iterdir())}
    if REGEN:
        for name in golden_names():
            (GOLDEN / name).unlink()
        for name, data in outputs.items():
            (GOLDEN / name).write_bytes(data)
    return outputs


def test_every_output_has_a_golden_file_and_every_golden_file_an_output(produced):
    assert sorted(produced) == golden_names()


@pytest.mark.parametrize("name", golden_names())
def test_output_is_byte_identical_to_its_golden_file(produced, name):
    expected = (GOLDEN / name).read_bytes()
    got = produced.get(name)
    assert got is not None, f"{name}: no longer produced"
    if got != expected:
        pytest.fail(f"{name} differs from tests/data/golden/{name}: {first_difference(expected, got)}")


def first_difference(expected: bytes, got: bytes) -> str:
    """Where two outputs first differ, with some context (outputs are often one long JSON line)."""
    old, new = expected.decode(errors="replace").splitlines(), got.decode(errors="replace").splitlines()
    for n, (a, b) in enumerate(zip(old, new), 1):
        if a != b:
            col = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            around = slice(max(0, col - 60), col + 100)
            return f"line {n}, column {col + 1}:\n  golden: …{a[around]}…\n  now:    …{b[around]}…"
    return f"{len(old)} lines in the golden file, {len(new)} now (or only line ends differ)"
