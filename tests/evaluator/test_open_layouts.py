"""Open benchmarks with reference answers from other tools' layouts: VLMEvalKit's VQA and caption TSVs through
`vlmdesk import`, and predictions of open tasks (lmms-eval samples, VLMEvalKit prediction files) through
`vlmdesk import-predictions`, on real files written here in each layout."""

from __future__ import annotations

import base64
import csv
import json
import re
from pathlib import Path

import pytest

from db import catalog, open_workspace, runs
from evaluator.formats.importers.tsv import CAPTION_PROMPT
from tests.factories import jpeg_bytes
from vlmdesk.cli import main

ERROR_LINE = re.compile(r"^error: .+:\d+: \w[\w -]*: .+$")

# Ten TextVQA-style answers with repeats (a repeat is a vote in VQA accuracy), as VLMEvalKit writes them: str(list).
TEN = ["nokia", "nokia", "Nokia", "nokia", "nokia phone", "nokia", "unanswerable", "nokia", "NOKIA", "nokia"]


def _b64(seed: int) -> str:
    return base64.b64encode(jpeg_bytes(seed, side=24)).decode()


def _write(path: Path, header: list[str], rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(h, "") for h in header])
    return path


# The layouts of VLMEvalKit's VQA / caption TSVs (vlmeval/dataset/image_vqa.py, image_caption.py, and the TSV
# fields table of docs/en/Development.md): name -> (header, rows, the references each row should give).
def _layouts() -> dict[str, tuple[list[str], list[dict], list[list[str]]]]:
    return {
        "TextVQA_VAL": (
            ["index", "image", "question", "answer"],
            [
                {"index": 0, "image": _b64(1), "question": "what brand is the phone?", "answer": str(TEN)},
                {"index": 1, "image": "0", "question": "什么牌子的手机?", "answer": str(["诺基亚", "诺基亚", "nokia"])},
            ],
            [TEN, ["诺基亚", "诺基亚", "nokia"]],
        ),
        "DocVQA_VAL": (
            ["index", "image", "question", "answer"],
            [{"index": 10, "image": _b64(2), "question": "What is the date?", "answer": "['1/8/93', 'Jan 8, 1993']"}],
            [["1/8/93", "Jan 8, 1993"]],
        ),
        "InfoVQA_VAL": (
            ["index", "image", "question", "answer"],
            [{"index": 7, "image": _b64(3), "question": "How many?", "answer": "['4', 'four']"}],
            [["4", "four"]],
        ),
        "ChartQA_TEST": (  # one answer per question, as text; the split names ChartQA's human / augmented halves
            ["index", "image", "question", "answer", "split"],
            [
                {"index": 0, "image": _b64(4), "question": "What is the peak?", "answer": "14", "split": "test_human"},
                {"index": 1, "image": _b64(5), "question": "Which year?", "answer": "2019", "split": "test_augmented"},
            ],
            [["14"], ["2019"]],
        ),
        "OCRVQA_TESTCORE": (
            ["index", "image", "question", "answer"],
            [{"index": 3, "image": _b64(6), "question": "Who wrote this book?", "answer": "Arthur Conan Doyle"}],
            [["Arthur Conan Doyle"]],
        ),
        "COCO_VAL": (  # no question column: VLMEvalKit asks its caption prompt
            ["index", "image", "answer"],
            [
                {
                    "index": 0,
                    "image": _b64(7),
                    "answer": str(
                        [
                            "A man riding a bike.",
                            "A person on a bicycle in the street.",
                            "A cyclist rides past parked cars.",
                            "Someone is biking down a road.",
                            "A man on a bike.",
                        ]
                    ),
                }
            ],
            [
                [
                    "A man riding a bike.",
                    "A person on a bicycle in the street.",
                    "A cyclist rides past parked cars.",
                    "Someone is biking down a road.",
                    "A man on a bike.",
                ]
            ],
        ),
        "DocVQA_TEST": (  # a TEST split: no answers, no references
            ["index", "image", "question"],
            [{"index": 0, "image": _b64(8), "question": "What is the total?"}],
            [[]],
        ),
    }


def _cli(capsys, ws: Path, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--workspace", str(ws), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name", list(_layouts()))
def test_each_vqa_layout_imports_as_an_open_benchmark_with_its_references(tmp_path, capsys, name):
    header, rows, expected = _layouts()[name]
    path = _write(tmp_path / f"{name}.tsv", header, rows)
    ws = tmp_path / "w.sqlite"
    code, out, err = _cli(capsys, ws, "import", path, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["format"], report["kind"], report["questions"]) == ("vqa-tsv", "open", len(rows))
    with open_workspace(ws) as w:
        bench = catalog.benchmark_by_name(w, report["name"])
        assert bench.kind == "open"
        items = catalog.list_items(w, bench.id)
    assert [list(i.references) for i in items] == expected  # file order, repeats and case kept
    assert all(i.options == () and i.answer is None and i.image_sha256 for i in items)
    if "question" not in header:
        assert [i.question for i in items] == [CAPTION_PROMPT] * len(rows)
    else:
        assert [i.question for i in items] == [r["question"] for r in rows]
    if "split" in header:
        assert [i.split for i in items] == [r["split"] for r in rows]
    if name == "TextVQA_VAL":  # the second row shares the first row's image by index
        assert items[0].image_sha256 == items[1].image_sha256
        assert items[1].language == "zh"


def test_a_yes_no_tsv_is_still_pope_and_an_open_one_with_yes_answers_can_be_named(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    pope = _write(
        tmp_path / "yn.tsv",
        ["index", "question", "answer", "image", "category"],
        [
            {"index": 0, "question": "Is there a dog?", "answer": "Yes", "image": _b64(1), "category": "random"},
            {"index": 1, "question": "Is there a cat?", "answer": "No", "image": "0", "category": "random"},
        ],
    )
    code, out, err = _cli(capsys, ws, "import", pope, "--json")
    assert code == 0, err
    assert (json.loads(out)["format"], json.loads(out)["kind"]) == ("pope-tsv", "yesno")
    # A VQA file whose first answers are yes/no (the first 50 rows are looked at) reads as POPE; a later answer
    # that is neither stops it with an error naming the way out.
    yes = [{"index": n, "question": f"Is it raining {n}?", "answer": "yes", "image": "50"} for n in range(50)]
    vqa = _write(
        tmp_path / "vqa.tsv",
        ["index", "question", "answer", "image"],
        [*yes, {"index": 50, "question": "What colour?", "answer": str(["red"] * 10), "image": _b64(3)}],
    )
    code, out, err = _cli(capsys, ws, "import", vqa)
    assert code == 2 and f"{vqa}:52: answer:" in err and "--format vqa-tsv" in err
    code, out, err = _cli(capsys, ws, "import", vqa, "--format", "vqa-tsv", "--json")
    assert code == 0, err
    with open_workspace(ws) as w:
        items = catalog.list_items(w, catalog.benchmark_by_name(w, json.loads(out)["name"]).id)
    by_index = {i.index: list(i.references) for i in items}
    assert by_index == {**{n: ["yes"] for n in range(50)}, 50: ["red"] * 10}


HOSTILE = {
    "huge": ("[" + ", ".join(["'x'"] * 20_000) + "]", "characters; at most"),
    "nested": ("[['a', 'b'], 'c']", "element 1 is a nested list"),
    "deep": ("[" * 400 + "]" * 400, "answer"),
    "a tuple in brackets": ("[('a',)]", "element 1 is a nested tuple"),
    "numbers": ("['a', 3]", "element 2 is not a quoted text"),
    "code": ("[__import__('os').system('touch PWNED')]", "element 1 is not a quoted text"),
    "non-list (an expression)": ("[open('x').read()][0]", "not a Python list"),
    "a comprehension": ("[x for x in 'ab']", "not a Python list"),
    "unclosed": ("['a', 'b'", "answer"),  # not bracketed at both ends: one plain reference, no error
    "broken": ("['a', 'b]", "not a Python list"),
    "an f-string": ("[f'{1+1}']", "element 1 is not a quoted text"),
    "too many": (str(["a"] * 101), "101 reference answers; at most 100"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_answer_cell_is_a_one_line_error_and_nothing_is_stored(tmp_path, capsys, monkeypatch, case):
    cell, says = HOSTILE[case]
    monkeypatch.chdir(tmp_path)
    path = _write(
        tmp_path / "TextVQA_VAL.tsv",
        ["index", "image", "question", "answer"],
        [
            {"index": 0, "image": _b64(1), "question": "fine?", "answer": "['yes']"},
            {"index": 1, "image": _b64(2), "question": "hostile?", "answer": cell},
        ],
    )
    ws = tmp_path / "w.sqlite"
    code, out, err = _cli(capsys, ws, "import", path, "--format", "vqa-tsv", "--json")
    assert not (tmp_path / "PWNED").exists()  # never evaluated
    if case == "unclosed":
        assert code == 0, err
        with open_workspace(ws) as w:
            items = catalog.list_items(w, catalog.benchmark_by_name(w, json.loads(out)["name"]).id)
        assert items[1].references == ("['a', 'b'",)
        return
    assert code == 2
    (line,) = err.strip().splitlines()
    assert ERROR_LINE.match(line), line
    assert f"{path}:3: answer:" in line and says in line
    with open_workspace(ws) as w:
        assert catalog.list_benchmarks(w) == [] or all(b.kind != "open" for b in catalog.list_benchmarks(w))
    # --skip-bad keeps the good row and names the bad one
    code, out, err = _cli(capsys, ws, "import", path, "--format", "vqa-tsv", "--skip-bad", "--json")
    assert code == 0 and json.loads(out)["questions"] == 1 and f"{path}:3: answer:" in err


def test_a_multiple_choice_tsv_is_refused_as_vqa(tmp_path, capsys):
    path = _write(
        tmp_path / "m.tsv",
        ["index", "question", "A", "B", "answer", "image"],
        [{"index": 0, "question": "q?", "A": "x", "B": "y", "answer": "A", "image": _b64(1)}],
    )
    code, out, err = _cli(capsys, tmp_path / "w.sqlite", "import", path, "--format", "vqa-tsv")
    assert code == 2 and "option column(s) A B" in err


# ------------------------------------------------------------------------------------------------ predictions


def _open_bench(tmp_path: Path, capsys, ws: Path, name: str, rows: list[dict], header=None) -> list:
    path = _write(tmp_path / f"{name}.tsv", header or ["index", "image", "question", "answer"], rows)
    code, out, err = _cli(capsys, ws, "import", path, "--name", name, "--json")
    assert code == 0, err
    with open_workspace(ws) as w:
        return catalog.list_items(w, catalog.benchmark_by_name(w, name).id)


def _passes(ws: Path, run_id: int) -> tuple[runs.Run, dict]:
    with open_workspace(ws) as w:
        run = runs.get_run(w, run_id)
        items = {i.id: i.index for i in catalog.list_items(w, run.benchmark_id)}
        return run, {items[p.item_id]: p for p in runs.predictions_of(w, run_id)}


def _lmms(path: Path, samples: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for s in samples:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    return path


def test_lmms_eval_open_task_samples_become_an_open_run(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    # A TextVQA benchmark indexed by question_id, as lmms-eval's textvqa_val docs are.
    questions = {34602: "what is the brand of this camera?", 34603: "what does the small white text spell?"}
    _open_bench(
        tmp_path,
        capsys,
        ws,
        "textvqa",
        [{"index": q, "image": _b64(q), "question": text, "answer": str(TEN)} for q, text in questions.items()],
    )
    said = {34602: "Nokia", 34603: "copenhagen\n(the text at the bottom)"}
    # lmms-eval's textvqa_val sample: the doc without its image, `target` as doc_to_target renders it (the literal
    # "answer": textvqa has no such column), doc["answers"] already normalised by its process_results.
    samples = [
        {
            "doc_id": n,
            "doc": {"question_id": q, "question": questions[q], "answers": [a.lower() for a in TEN], "image_id": "x"},
            "target": "answer",
            "arguments": [{"max_new_tokens": 16}],
            "resps": [[said[q]]],
            "filtered_resps": [said[q]],
            "exact_match": 1.0,
        }
        for n, q in enumerate(questions)
    ]
    path = _lmms(tmp_path / "samples_textvqa_val.jsonl", samples)
    code, out, err = _cli(capsys, ws, "import-predictions", path, "--bench", "textvqa", "--model", "llava", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["strategy"], done["passes"], done["items"]) == ("open", 2, 2)
    run, passes = _passes(ws, done["run_id"])
    assert (run.strategy, run.status, run.model_spec) == ("open", "finished", "llava")
    assert {q: p.response for q, p in passes.items()} == said  # stored as given
    assert all((p.choice, p.correct, p.answer, p.pass_) == (None, None, None, 0) for p in passes.values())
    code, out, err = _cli(capsys, ws, "report", done["run_id"], "--json")  # reported as a run of its own
    assert code == 0, err
    # the same file again: the run is already there
    code, out, err = _cli(capsys, ws, "import-predictions", path, "--bench", "textvqa", "--model", "llava", "--json")
    assert code == 0 and json.loads(out)["already_imported"] is True


def test_docvqa_coco_and_chartqa_samples_find_their_items(tmp_path, capsys):
    """DocVQA's docs name their item as `questionId`, COCO's `question_id` is a file name, ChartQA's docs name none
    (the sample's doc_id, its place in the split, is the index)."""
    ws = tmp_path / "w.sqlite"
    _open_bench(
        tmp_path,
        capsys,
        ws,
        "docvqa",
        [{"index": 49153, "image": _b64(1), "question": "What is the ts?", "answer": "['0.28']"}],
    )
    docvqa = [
        {
            "doc_id": 0,
            "doc": {"questionId": 49153, "question": "What is the ts?", "answers": ["0.28"], "docId": 14465},
            "target": ["0.28"],
            "filtered_resps": ["0.28"],
        }
    ]
    code, out, err = _cli(
        capsys,
        ws,
        "import-predictions",
        _lmms(tmp_path / "d.jsonl", docvqa),
        "--bench",
        "docvqa",
        "--model",
        "m",
        "--json",
    )
    assert code == 0, err
    assert {q: p.response for q, p in _passes(ws, json.loads(out)["run_id"])[1].items()} == {49153: "0.28"}

    caption = "Provide a one-sentence caption for the provided image."
    refs = ["A man riding a wave.", "A surfer on a wave.", "Someone surfing.", "A surfer.", "A big wave."]
    _open_bench(
        tmp_path,
        capsys,
        ws,
        "coco2017",
        [{"index": "000000179765.jpg", "image": _b64(2), "question": caption, "answer": str(refs)}],
    )
    coco = [
        {
            "doc_id": 0,
            "doc": {"question_id": "000000179765.jpg", "question": caption, "answer": refs, "id": 38},
            "target": refs,
            "filtered_resps": ["A surfer riding a big wave."],
        }
    ]
    code, out, err = _cli(
        capsys,
        ws,
        "import-predictions",
        _lmms(tmp_path / "c.jsonl", coco),
        "--bench",
        "coco2017",
        "--model",
        "m",
        "--json",
    )
    assert code == 0, err
    assert _passes(ws, json.loads(out)["run_id"])[1]["000000179765.jpg"].response == "A surfer riding a big wave."

    _open_bench(
        tmp_path,
        capsys,
        ws,
        "chartqa",
        [
            {"index": 0, "image": _b64(3), "question": "What is the peak?", "answer": "14"},
            {"index": 1, "image": _b64(4), "question": "Which year?", "answer": "2019"},
        ],
    )
    chart = [
        {"doc_id": n, "doc": {"type": "human_test", "question": q, "answer": a}, "target": a, "filtered_resps": [r]}
        for n, (q, a, r) in enumerate([("What is the peak?", "14", "14"), ("Which year?", "2019", "2018")])
    ]
    code, out, err = _cli(
        capsys,
        ws,
        "import-predictions",
        _lmms(tmp_path / "ch.jsonl", chart),
        "--bench",
        "chartqa",
        "--model",
        "m",
        "--json",
    )
    assert code == 0, err
    assert {q: p.response for q, p in _passes(ws, json.loads(out)["run_id"])[1].items()} == {0: "14", 1: "2018"}


def test_a_vlmevalkit_prediction_file_of_a_vqa_dataset_becomes_an_open_run(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    header, rows, _ = _layouts()["COCO_VAL"]
    items = _open_bench(tmp_path, capsys, ws, "coco-val", rows, header)
    # VLMEvalKit's {model}_COCO_VAL.xlsx/.tsv: the rows without images, its caption prompt as question, `prediction`
    pred = _write(
        tmp_path / "llava_COCO_VAL.tsv",
        ["index", "answer", "question", "prediction"],
        [{"index": 0, "answer": rows[0]["answer"], "question": CAPTION_PROMPT, "prediction": "A man cycling."}],
    )
    code, out, err = _cli(capsys, ws, "import-predictions", pred, "--bench", "coco-val", "--model", "llava", "--json")
    assert code == 0, err
    run, passes = _passes(ws, json.loads(out)["run_id"])
    assert run.strategy == "open" and passes[items[0].index].response == "A man cycling."


def test_open_predictions_that_contradict_the_benchmark_are_refused(tmp_path, capsys):
    ws = tmp_path / "w.sqlite"
    _open_bench(
        tmp_path, capsys, ws, "tv", [{"index": 1, "image": _b64(1), "question": "what brand?", "answer": "['a']"}]
    )
    cases = {
        "question": {"doc_id": 0, "doc": {"question_id": 1, "question": "what colour?"}, "filtered_resps": ["red"]},
        "A": {
            "doc_id": 0,
            "doc": {"question_id": 1, "question": "what brand?", "A": "x", "B": "y"},
            "filtered_resps": ["A"],
        },
        "index": {"doc_id": 0, "doc": {"question_id": 9, "question": "what brand?"}, "filtered_resps": ["a"]},
    }
    for field, sample in cases.items():
        path = _lmms(tmp_path / f"bad_{field}.jsonl", [sample])
        code, out, err = _cli(capsys, ws, "import-predictions", path, "--bench", "tv", "--model", "m")
        assert code == 2, err
        (line,) = err.strip().splitlines()
        assert ERROR_LINE.match(line) and f"{path}:1: {field}:" in line, line
    with open_workspace(ws) as w:
        assert runs.list_runs(w) == []


# ------------------------------------------------------------------------------------------------ lmms-lab parquet


def _parquet(path: Path, records: list[dict], schema) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(records, schema=schema), path)
    return path


def _image(seed: int) -> dict:
    return {"bytes": jpeg_bytes(seed, side=24), "path": None}


def _hub_layouts() -> dict:
    """lmms-lab's VQA / caption parquet layouts (the columns lmms-eval's task utils read) -> (records, schema,
    the index each row should get, its references)."""
    import pyarrow as pa

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    vqa_answer = pa.struct([("answer", pa.string()), ("answer_confidence", pa.string()), ("answer_id", pa.int64())])
    caps = ["A dog on a couch.", "A brown dog lying down.", "A dog resting.", "A couch with a dog.", "A pet."]
    return {
        "textvqa": (
            [
                {"image_id": "a1", "question_id": 34602, "question": "what brand?", "image": _image(1),
                 "answers": TEN, "ocr_tokens": ["nokia", "5"], "set_name": "val"},
                {"image_id": "a1", "question_id": 34603, "question": "写的什么?", "image": _image(1),
                 "answers": ["诺基亚"] * 10, "ocr_tokens": [], "set_name": "val"},
            ],
            pa.schema([("image_id", pa.string()), ("question_id", pa.int64()), ("question", pa.string()),
                       ("image", image), ("answers", pa.list_(pa.string())), ("ocr_tokens", pa.list_(pa.string())),
                       ("set_name", pa.string())]),
            [34602, 34603],
            [TEN, ["诺基亚"] * 10],
        ),
        "vqav2": (
            [{"question_id": 262148000, "question": "Where is he looking?", "image": _image(2),
              "multiple_choice_answer": "down", "answer_type": "other",
              "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": n + 1}
                          for n, a in enumerate(["down"] * 6 + ["table", "table", "skateboard", "at table"])]}],
            pa.schema([("question_id", pa.int64()), ("question", pa.string()), ("image", image),
                       ("multiple_choice_answer", pa.string()), ("answer_type", pa.string()),
                       ("answers", pa.list_(vqa_answer))]),
            [262148000],
            [["down"] * 6 + ["table", "table", "skateboard", "at table"]],
        ),
        "docvqa": (
            [{"questionId": "49153", "question": "What is the ts?", "image": _image(3), "answers": ["0.28", ".28"],
              "docId": 14465, "data_split": "val"}],
            pa.schema([("questionId", pa.string()), ("question", pa.string()), ("image", image),
                       ("answers", pa.list_(pa.string())), ("docId", pa.int64()), ("data_split", pa.string())]),
            [49153],
            [["0.28", ".28"]],
        ),
        "coco2017": (
            [{"question_id": "000000179765.jpg", "question": "Provide a one-sentence caption for the provided image.",
              "image": _image(4), "answer": caps, "id": 38}],
            pa.schema([("question_id", pa.string()), ("question", pa.string()), ("image", image),
                       ("answer", pa.list_(pa.string())), ("id", pa.int64())]),
            ["000000179765.jpg"],
            [caps],
        ),
        "chartqa": (  # no id column: the row's place in the split, from 0, as lmms-eval's doc_id
            [{"type": "human_test", "question": "What is the peak?", "answer": "14", "image": _image(5)},
             {"type": "augmented_test", "question": "Which year?", "answer": "2019", "image": _image(6)}],
            pa.schema([("type", pa.string()), ("question", pa.string()), ("answer", pa.string()), ("image", image)]),
            [0, 1],
            [["14"], ["2019"]],
        ),
    }  # fmt: skip


@pytest.mark.parametrize("name", list(_hub_layouts()))
def test_lmms_lab_vqa_parquet_imports_open_and_its_lmms_eval_samples_find_their_items(tmp_path, capsys, name):
    records, schema, indexes, references = _hub_layouts()[name]
    path = _parquet(tmp_path / f"{name}-validation-00000-of-00001.parquet", records, schema)
    ws = tmp_path / "w.sqlite"
    code, out, err = _cli(capsys, ws, "import", path, "--name", name, "--json")
    assert code == 0, err
    assert (json.loads(out)["format"], json.loads(out)["kind"]) == ("vqa-parquet", "open")
    with open_workspace(ws) as w:
        items = catalog.list_items(w, catalog.benchmark_by_name(w, name).id)
    assert [i.index for i in items] == indexes
    assert [list(i.references) for i in items] == references
    assert all(i.image_sha256 for i in items) and "ocr_tokens" not in items[0].meta
    # lmms-eval's --log_samples of the same split: the doc is the row without its image
    samples = [
        {
            "doc_id": n,
            "doc": {k: v for k, v in r.items() if k != "image"},
            "target": "answer",
            "filtered_resps": [f"said {n}"],
        }
        for n, r in enumerate(records)
    ]
    sample_file = _lmms(tmp_path / f"samples_{name}.jsonl", samples)
    code, out, err = _cli(capsys, ws, "import-predictions", sample_file, "--bench", name, "--model", "m", "--json")
    assert code == 0, err
    run, passes = _passes(ws, json.loads(out)["run_id"])
    assert run.strategy == "open"
    assert {i: p.response for i, p in passes.items()} == {i: f"said {n}" for n, i in enumerate(indexes)}


def test_a_hostile_parquet_answer_is_a_one_line_error(tmp_path, capsys):
    import pyarrow as pa

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("question_id", pa.int64()), ("question", pa.string()), ("image", image),
                        ("answers", pa.list_(pa.struct([("text", pa.string())])))])  # fmt: skip
    path = _parquet(
        tmp_path / "bad.parquet",
        [{"question_id": 1, "question": "q?", "image": _image(1), "answers": [{"text": "a"}]}],
        schema,
    )
    code, out, err = _cli(capsys, tmp_path / "w.sqlite", "import", path)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert ERROR_LINE.match(line) and f"{path}:1: answers: element 1 is a dict" in line, line


def test_an_open_benchmark_exports_as_a_vqa_tsv_that_imports_back_the_same(tmp_path, capsys):
    """import -> qc export --format vqa-tsv -> import: the same questions, references (order, repeats, a bracketed
    single text), images and splits; also for an open benchmark that came from lmms-lab's parquet."""
    header, rows, _ = _layouts()["TextVQA_VAL"]
    rows = [
        *rows,
        {"index": 2, "image": "0", "question": "tab\there, line\nbreak?", "answer": str(["[citation needed]"])},
        {"index": 3, "image": _b64(9), "question": "no answer?", "answer": ""},
    ]
    ws = tmp_path / "w.sqlite"
    first = _open_bench(tmp_path, capsys, ws, "tv", rows, header)
    records, schema, _, _ = _hub_layouts()["vqav2"]
    parquet = _parquet(tmp_path / "vqav2.parquet", records, schema)
    assert _cli(capsys, ws, "import", parquet, "--name", "v2")[0] == 0
    for name in ("tv", "v2"):
        out = tmp_path / f"{name}_export.tsv"
        code, _, err = _cli(capsys, ws, "qc", "export", name, "--out", out, "--format", "vqa-tsv")
        assert code == 0, err
        code, _, err = _cli(capsys, ws, "import", out, "--name", f"{name}-again")
        assert code == 0, err
        with open_workspace(ws) as w:
            before, after = (catalog.list_items(w, catalog.benchmark_by_name(w, n).id) for n in (name, f"{name}-again"))
        shape = [(i.index, i.question, i.references, i.image_sha256, i.split) for i in before]
        assert shape == [(i.index, i.question, i.references, i.image_sha256, i.split) for i in after]
        if name == "tv":
            assert [i.references for i in after][2:] == [("[citation needed]",), ()]
            assert first[0].references == tuple(TEN)


@pytest.mark.parametrize(("cell", "kept"), [("[2007, 2008]", "[2007, 2008]"), ("[-1.5, 2]", "[-1.5, 2]")])
def test_a_list_of_numbers_is_one_answer_as_mathvista_writes_it(tmp_path, capsys, cell, kept):
    # MathVista_MINI's list answers (answer_type "list"): one answer that is a list, not several references.
    path = _write(
        tmp_path / "MathVista_MINI.tsv",
        ["index", "image", "question", "answer"],
        [{"index": 0, "image": _b64(1), "question": "Which years?", "answer": cell}],
    )
    ws = tmp_path / "w.sqlite"
    code, out, err = _cli(capsys, ws, "import", path, "--format", "vqa-tsv", "--json")
    assert code == 0, err
    with open_workspace(ws) as w:
        (item,) = catalog.list_items(w, catalog.benchmark_by_name(w, json.loads(out)["name"]).id)
    assert item.references == (kept,)
