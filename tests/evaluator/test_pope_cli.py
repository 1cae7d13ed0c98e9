"""`vlmdesk pope score`, `vlmdesk pope build` and POPE means in `vlmdesk report`, through the command line.

The official-equivalence tests run on the real question slices in tests/data/pope (see its README) against
POPE's evaluate.py logic kept literally below.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from db import open_workspace, runs
from evaluator.scoring.pope import parse_official, pope_question, read_pope_questions
from tests.factories import png_bytes, pope_scenes
from tests.pope_official import official_evaluate
from tests.server_process import QuietServer
from vlmdesk.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "pope"
COCO_SLICES = {
    "random": "coco_pope_random.json",
    "popular": "coco_pope_popular.json",
    "adversarial": "coco_pope_adversarial.json",
}
METRICS = ("tp", "fp", "tn", "fn", "accuracy", "precision", "recall", "f1", "yes_ratio")


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_json(capsys, *args):
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


# ------------------------------------------------------------------------------------ the official script


# Answers that real models give, chosen so the official rule reads some of them unexpectedly ("NO" -> yes).
VARIED_ANSWERS = [
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
    "There is a dog. No cat.",
    "It is not present.",
    "Yes!",
    "No, there isn't",
    "I don't see one.",
    "Certainly",
    "no, it is absent",
    "not sure",
]


def varied(n: int, shift: int) -> list[str]:
    return [VARIED_ANSWERS[(i * 5 + shift) % len(VARIED_ANSWERS)] for i in range(n)]


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def labels_file(tmp_path, slice_name) -> Path:
    """The script reads labels line by line: the pretty-printed GQA array is flattened for it first."""
    source = DATA / slice_name
    if not source.read_text().lstrip().startswith("["):
        return source
    return write_jsonl(tmp_path / f"{slice_name}.labels.jsonl", json.loads(source.read_text()))


# ------------------------------------------------------------------------------------------ pope score


@pytest.mark.parametrize("slice_name", [*COCO_SLICES.values(), "gqa_pope_seem_random.json"])
@pytest.mark.parametrize("shift", [0, 4, 11])
def test_official_parser_through_the_cli_equals_the_official_script(tmp_path, capsys, slice_name, shift):
    questions = read_pope_questions(DATA / slice_name)
    texts = varied(len(questions), shift)
    # The script's own input: {"text": …} per line, paired with the labels by line order.
    by_line = write_jsonl(tmp_path / "answers.jsonl", [{"text": t} for t in texts])
    expected = official_evaluate(by_line, labels_file(tmp_path, slice_name))

    got = cli_json(
        capsys, "pope", "score", "--questions", DATA / slice_name, "--answers", by_line, "--parser", "official"
    )
    for key in METRICS:
        assert got[key] == expected[key], key  # exact: the same operations in the same order
    assert got["unknown"] == 0 and got["questions"] == len(questions) and got["parser"] == "official"
    assert 0 < got["tp"] + got["fp"] < len(questions)  # both readings really occur

    # The same answers shuffled, with question ids and in "answer": matched by id, same numbers.
    order = list(range(len(questions)))
    random.Random(shift).shuffle(order)
    shuffled = write_jsonl(
        tmp_path / "shuffled.jsonl",
        [{"question_id": questions[i]["question_id"], "text": questions[i]["text"], "answer": texts[i]} for i in order],
    )
    again = cli_json(
        capsys, "pope", "score", "--questions", DATA / slice_name, "--answers", shuffled, "--parser", "official"
    )
    assert {k: again[k] for k in METRICS} == {k: got[k] for k in METRICS}


def test_several_settings_give_per_setting_metrics_and_their_mean(tmp_path, capsys):
    args, expected = [], {}
    for shift, (setting, slice_name) in enumerate(COCO_SLICES.items()):
        n = len(read_pope_questions(DATA / slice_name))
        answers = write_jsonl(tmp_path / f"{setting}.jsonl", [{"text": t} for t in varied(n, 3 * shift)])
        expected[setting] = official_evaluate(answers, DATA / slice_name)
        args += ["--questions", DATA / slice_name, "--answers", answers]

    got = cli_json(capsys, "pope", "score", *args, "--parser", "official")
    assert list(got["settings"]) == ["random", "popular", "adversarial"]
    for setting, metrics in got["settings"].items():
        assert {k: metrics[k] for k in METRICS} == {k: expected[setting][k] for k in METRICS}
        assert metrics["answers_file"] == str(tmp_path / f"{setting}.jsonl")
    for key in ("accuracy", "precision", "recall", "f1", "yes_ratio"):
        assert got["mean"][key] == pytest.approx(sum(e[key] for e in expected.values()) / 3)
    assert len({got["settings"][s]["accuracy"] for s in COCO_SLICES}) > 1  # the mean is not trivially one value

    code, out, _ = cli(capsys, "pope", "score", *args, "--parser", "official")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "parser official"
    assert [line.split()[0] for line in lines[2:]] == ["random", "popular", "adversarial", "mean"]
    assert f"{100 * got['mean']['accuracy']:.1f}%" in lines[-1]


def test_settings_are_named_by_file_stem_when_the_names_do_not_say_distinct_settings(tmp_path, capsys):
    questions = DATA / "coco_pope_random.json"
    gqa = DATA / "gqa_pope_seem_random.json"  # also "random": the stems name the two apart
    a = write_jsonl(tmp_path / "a.jsonl", [{"text": "Yes"}] * 60)
    b = write_jsonl(tmp_path / "b.jsonl", [{"text": "No"}] * 10)
    got = cli_json(
        capsys, "pope", "score", "--questions", questions, "--answers", a, "--questions", gqa, "--answers", b
    )
    assert list(got["settings"]) == ["coco_pope_random", "gqa_pope_seem_random"]
    assert got["settings"]["gqa_pope_seem_random"]["precision"] is None  # no "yes" at all: undefined, not 0


# (answer, what it means) — the intended reading is written by hand, not computed by the parser under test.
STRICT_PHRASINGS = [
    ("Yes", "yes"),
    ("NO", "no"),
    ("No!", "no"),
    ("not sure", "unknown"),
    ("There is no dog in the image.", "no"),
    ("There is a dog in the image.", "yes"),
    ("I don't see a dog.", "no"),
    ("Hard to tell.", "unknown"),
    ("The image does not contain a dog.", "no"),
    ("Sure, yes.", "yes"),
    ("", "unknown"),
    ("Nope.", "no"),
    ("Is there a dog? Yes.", "yes"),
    ("isn't there", "no"),
    ("I can see a cat", "yes"),
    ("No idea.", "unknown"),
]


def test_strict_parser_through_the_cli_on_a_table_of_phrasings(tmp_path, capsys):
    labels = ["yes", "no"] * (len(STRICT_PHRASINGS) // 2)
    questions = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"question_id": i + 1, "image": "x.jpg", "text": "Is there a dog in the image?", "label": label}
            for i, label in enumerate(labels)
        ],
    )
    answers = write_jsonl(
        tmp_path / "answers.jsonl",
        [{"question_id": i + 1, "answer": text} for i, (text, _) in enumerate(STRICT_PHRASINGS)],
    )
    counts = Counter()
    for label, (_, reading) in zip(labels, STRICT_PHRASINGS):
        counts[
            {"yes": {"yes": "tp", "no": "fp"}, "no": {"yes": "fn", "no": "tn"}}[reading][label]
            if reading != "unknown"
            else "unknown"
        ] += 1

    got = cli_json(capsys, "pope", "score", "--questions", questions, "--answers", answers)  # strict: the default
    assert got["parser"] == "strict"
    assert {k: got[k] for k in ("tp", "fp", "tn", "fn", "unknown")} == {
        k: counts[k] for k in ("tp", "fp", "tn", "fn", "unknown")
    }
    n = len(STRICT_PHRASINGS)
    assert got["accuracy"] == (counts["tp"] + counts["tn"]) / n  # unknown answers count as wrong
    assert got["recall"] == counts["tp"] / labels.count("yes")
    assert got["yes_ratio"] == (counts["tp"] + counts["fp"]) / n

    official = cli_json(capsys, "pope", "score", "--questions", questions, "--answers", answers, "--parser", "official")
    assert official["unknown"] == 0 and official["tp"] + official["fp"] > got["tp"] + got["fp"]  # "NO" is yes there


@pytest.mark.parametrize(
    "answers, message",
    [
        ('{"text": "Yes"}\n{"text": "No"\n', r"answers.jsonl, line 2: not valid JSON"),
        ('{"text": "Yes"}\n', r"answers.jsonl: 1 answers for 60 questions"),
        ("\n", r"answers.jsonl: no answers \(for 60 questions\)"),
        ('{"question_id": 999999, "text": "Yes"}\n', r"answers.jsonl, line 1: question_id 999999 is not among"),
        ('{"question_id": 1, "reply": "Yes"}\n', r"answers.jsonl, line 1: field 'answer' or 'text' missing"),
    ],
)
def test_score_errors_are_one_line_with_file_and_line(tmp_path, capsys, answers, message):
    path = tmp_path / "answers.jsonl"
    path.write_text(answers)
    code, out, err = cli(capsys, "pope", "score", "--questions", DATA / "coco_pope_random.json", "--answers", path)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert re.search(message, err)


def test_score_command_line_errors(tmp_path, capsys):
    q = DATA / "coco_pope_random.json"
    code, _, err = cli(capsys, "pope", "score", "--questions", q, "--questions", q, "--answers", q)
    assert code == 2 and "2 --questions but 1 --answers" in err
    code, _, err = cli(capsys, "pope", "score", "--questions", q, "--answers", tmp_path / "missing.jsonl")
    assert code == 2 and err == f"error: {tmp_path / 'missing.jsonl'}: path: no such file\n"
    code, _, err = cli(capsys, "pope", "score", "--questions", q, "--answers", q, "--questions", q, "--answers", q)
    assert code == 2 and "given twice" in err


# ------------------------------------------------------------------------------------------ pope build

# tests/factories.POPE_SCENES, with PNG names as a COCO split would list them.
IMAGES = pope_scenes(".png")
CATEGORIES = sorted({name for names in IMAGES.values() for name in names})


@pytest.fixture
def coco(tmp_path):
    """(instances file, images dir): COCO-format annotations (ids that are not positions, repeated instances)
    and a real PNG of its own colour for every image."""
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    category_ids = {name: 7 + 5 * n for n, name in enumerate(CATEGORIES)}
    images, annotations = [], []
    for n, (file_name, names) in enumerate(IMAGES.items()):
        (images_dir / file_name).write_bytes(png_bytes(color=(20 * n, 255 - 20 * n, 90), size=(16, 12)))
        images.append({"id": 300 + n, "file_name": file_name, "width": 16, "height": 12})
        for name in names + names[:1]:
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": 300 + n,
                    "category_id": category_ids[name],
                    "bbox": [0, 0, 4, 4],
                    "area": 16,
                    "iscrowd": 0,
                }
            )
    path = tmp_path / "instances_tiny.json"
    path.write_text(
        json.dumps(
            {
                "info": {},
                "images": images,
                "annotations": annotations,
                "categories": [{"id": i, "name": n, "supercategory": "x"} for n, i in category_ids.items()],
            },
            indent=1,
        )
    )
    return path, images_dir


def build(capsys, coco, out, setting, *extra):
    annotations, images_dir = coco
    return cli_json(
        capsys,
        "pope",
        "build",
        "--annotations",
        annotations,
        "--images",
        images_dir,
        "--setting",
        setting,
        "--images-count",
        8,
        "--per-image",
        3,
        "--out",
        out,
        *extra,
    )


def negatives_by_image(records) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for r in records:
        if r["label"] == "no":
            grouped.setdefault(r["image"], []).append(r["object"])
    return grouped


def co_occurrence(image: str, candidate: str) -> int:
    return sum(1 for names in IMAGES.values() for present in IMAGES[image] if present in names and candidate in names)


@pytest.mark.parametrize("setting", ["random", "popular", "adversarial"])
def test_build_through_the_cli_follows_each_setting(tmp_path, capsys, coco, setting):
    out = tmp_path / f"pope_{setting}.json"
    summary = build(capsys, coco, out, setting, "--seed", 5)
    assert summary["annotation_format"] == "coco" and summary["questions"] == 48 and summary["images"] == 8
    assert summary["import"] is None
    records = read_pope_questions(out)
    assert [r["label"] for r in records] == ["yes", "no"] * 24
    chosen = sorted({r["image"] for r in records})
    assert len(chosen) == 8 and all(len(IMAGES[i]) >= 3 for i in chosen)
    vocabulary = Counter(name for image in chosen for name in IMAGES[image])
    for image in chosen:
        asked = [r for r in records if r["image"] == image]
        assert len({r["object"] for r in asked}) == 6  # 3 present + 3 absent, none twice
        assert {r["object"] for r in asked if r["label"] == "yes"} <= set(IMAGES[image])
        negatives = [r["object"] for r in asked if r["label"] == "no"]
        assert not set(negatives) & set(IMAGES[image])  # never an object that is there
        others = set(CATEGORIES) - set(IMAGES[image]) - set(negatives)
        if setting == "random":
            assert set(negatives) <= set(vocabulary)
        elif setting == "popular":
            assert min(vocabulary[n] for n in negatives) >= max((vocabulary[o] for o in others), default=0)
        else:
            scores = {c: co_occurrence(image, c) for c in CATEGORIES}
            assert min(scores[n] for n in negatives) >= max(scores[o] for o in others)
    assert all(r["text"] == pope_question(r["object"]) for r in records)
    texts = {r["object"]: r["text"] for r in records}
    assert texts.get("apple", "Is there an apple in the image?") == "Is there an apple in the image?"
    assert texts.get("skis", "Is there a pair of skis in the image?") == "Is there a pair of skis in the image?"


def test_build_is_reproducible_and_reads_objects_jsonl_the_same(tmp_path, capsys, coco):
    first, again, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    build(capsys, coco, first, "adversarial", "--seed", 2)
    build(capsys, coco, again, "adversarial", "--seed", 2)
    assert first.read_bytes() == again.read_bytes()
    assert any(
        build(capsys, coco, other, "adversarial", "--seed", s) and other.read_bytes() != first.read_bytes()
        for s in (3, 4, 5)
    )

    objects = write_jsonl(tmp_path / "objects.jsonl", [{"image": i, "objects": o} for i, o in IMAGES.items()])
    from_jsonl = tmp_path / "d.json"
    summary = build(capsys, (objects, coco[1]), from_jsonl, "adversarial", "--seed", 2)
    assert summary["annotation_format"] == "objects-jsonl"
    assert from_jsonl.read_bytes() == first.read_bytes()


def test_build_errors_write_nothing(tmp_path, capsys, coco):
    annotations, images_dir = coco
    (images_dir / "street3.png").unlink()
    out = tmp_path / "out.json"
    base = [
        "pope",
        "build",
        "--annotations",
        annotations,
        "--images",
        images_dir,
        "--setting",
        "popular",
        "--out",
        out,
        "--per-image",
        3,
    ]
    code, _, err = cli(capsys, *base, "--images-count", 11)  # every eligible image, street3 among them
    assert code == 2 and err == f"error: {images_dir}: 1 of the 11 chosen images are not in this folder: street3.png\n"
    code, _, err = cli(capsys, *base, "--images-count", 12)
    assert code == 2 and "only 11 images have at least 3 distinct objects; 12 requested" in err
    code, _, err = cli(capsys, *base[:5], tmp_path / "nowhere", *base[6:], "--images-count", 2)
    assert code == 2 and "nowhere: no such directory" in err
    bad = tmp_path / "instances_bad.json"
    bad.write_text('{"images": [], "annotations": [], "categories": [\n')
    code, _, err = cli(
        capsys, "pope", "build", "--annotations", bad, "--images", images_dir, "--setting", "random", "--out", out
    )
    assert code == 2 and f"error: {bad}, line 2: not valid JSON" in err
    assert not out.exists() and list(tmp_path.glob(".out.json*")) == []


def test_build_import_run_and_report_with_a_baseline(tmp_path, capsys, coco):
    ws = tmp_path / "ws.sqlite"
    run_ids = {}
    for setting in ("random", "popular", "adversarial"):
        out = tmp_path / f"tiny_pope_{setting}.json"
        summary = build(capsys, coco, out, setting, "--seed", 1, "--import", "--workspace", ws)
        assert summary["import"]["name"] == f"tiny-pope-{setting}"
        assert summary["import"]["questions"] == 48 and summary["import"]["images"] == 8
        run_ids[setting] = cli_json(
            capsys,
            "--workspace",
            ws,
            "run",
            "--bench",
            f"tiny-pope-{setting}",
            "--model",
            "baseline:random",
            "--seed",
            3,
        )["run_id"]
    # Re-building the same set is already imported; another set under a taken name is refused, no file written.
    again = build(
        capsys, coco, tmp_path / "tiny_pope_random.json", "random", "--seed", 1, "--import", "--workspace", ws
    )
    assert again["import"]["already_imported"]
    clash = tmp_path / "clash.json"
    code, _, err = cli(
        capsys,
        "--workspace",
        ws,
        "pope",
        "build",
        "--annotations",
        coco[0],
        "--images",
        coco[1],
        "--setting",
        "random",
        "--seed",
        9,
        "--images-count",
        8,
        "--out",
        clash,
        "--import",
        "--name",
        "tiny-pope-random",
    )
    assert code == 2 and "already named 'tiny-pope-random'" in err and not clash.exists()

    reports = {}
    for setting, run_id in run_ids.items():
        report = cli_json(capsys, "--workspace", ws, "report", run_id)
        assert report["strategy"] == "pope" and report["setting"] == setting and report["questions"] == 48
        assert report["pope_mean"] is None  # one run: no mean
        for parser in ("official", "strict"):
            m = report["pope"][parser]
            assert m["tp"] + m["fp"] + m["tn"] + m["fn"] + m["unknown"] == m["questions"] == 48
            assert m["tp"] + m["fn"] == 24  # half the questions ask about present objects
            assert m["accuracy"] == (m["tp"] + m["tn"]) / 48
        assert 0 < report["pope"]["strict"]["yes_ratio"] < 1  # random Yes/No
        reports[setting] = report

    together = cli_json(capsys, "--workspace", ws, "report", *run_ids.values())
    assert [r["run_id"] for r in together] == list(run_ids.values())  # still a list of reports
    [mean] = {json.dumps(r["pope_mean"], sort_keys=True) for r in together}  # the same group entry on each
    mean = json.loads(mean)
    assert mean["settings"] == run_ids and mean["model"] == "baseline:random" and mean["note"] is None
    for parser in ("official", "strict"):
        for key in ("accuracy", "precision", "recall", "f1", "yes_ratio"):
            assert mean[parser][key] == pytest.approx(sum(r["pope"][parser][key] for r in reports.values()) / 3)
    code, out, _ = cli(capsys, "--workspace", ws, "report", *run_ids.values())
    assert code == 0 and "POPE mean over settings  baseline:random  runs 1, 2, 3 (random, popular, adversarial)" in out
    assert f"{100 * mean['strict']['accuracy']:5.1f}%" in out.split("POPE mean over settings")[1]

    # A second run on one setting (another seed) is another group; a rerun of a setting in one group is refused.
    other = cli_json(
        capsys, "--workspace", ws, "run", "--bench", "tiny-pope-random", "--model", "baseline:random", "--seed", 4
    )["run_id"]
    mixed = cli_json(capsys, "--workspace", ws, "report", run_ids["random"], run_ids["popular"], other)
    assert mixed[0]["pope_mean"]["runs"] == [run_ids["random"], run_ids["popular"]] and mixed[2]["pope_mean"] is None
    rerun = cli_json(
        capsys,
        "--workspace",
        ws,
        "run",
        "--bench",
        "tiny-pope-random",
        "--model",
        "baseline:random",
        "--seed",
        3,
        "--new",
    )["run_id"]
    repeated = cli_json(capsys, "--workspace", ws, "report", run_ids["random"], rerun, run_ids["popular"])
    assert repeated[0]["pope_mean"]["official"] is None
    assert repeated[0]["pope_mean"]["note"] == f"no mean: setting random appears in runs {run_ids['random']}, {rerun}"


# ------------------------------------------------- official vs strict: the same stored answers, parsed twice


class ScriptedChatServer:
    """An OpenAI-compatible /v1/chat/completions of the test's own on 127.0.0.1: it answers "Is there a thing N"
    with replies[N], whatever order the requests arrive in."""

    def __init__(self, replies: dict[int, str]):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][0]["content"]
                text = content if isinstance(content, str) else content[-1]["text"]
                reply = replies[int(re.search(r"thing (\d+)", text).group(1))]
                payload = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# (reply, strict reading): the official reading of the first three is yes, yes, no.
REPLIES = [
    ("NO", "no"),
    ("No!", "no"),
    ("not sure", "unknown"),
    ("Yes", "yes"),
    ("No", "no"),
    ("There is no thing.", "no"),
    ("I don't think so.", "no"),
    ("", "unknown"),
]


def test_official_and_strict_are_the_same_stored_answers_parsed_twice(tmp_path, capsys):
    n = 24
    labels = ["yes" if i % 3 else "no" for i in range(1, n + 1)]
    replies = {i: REPLIES[(i - 1) % len(REPLIES)][0] for i in range(1, n + 1)}
    images = tmp_path / "imgs"
    images.mkdir()
    (images / "a.png").write_bytes(png_bytes())
    questions = write_jsonl(
        tmp_path / "things_pope_adversarial.json",
        [
            {"question_id": i, "image": "a.png", "text": f"Is there a thing {i} in the image?", "label": labels[i - 1]}
            for i in range(1, n + 1)
        ],
    )
    ws = tmp_path / "ws.sqlite"
    assert cli(capsys, "--workspace", ws, "import", questions, "--images", images)[0] == 0
    server = ScriptedChatServer(replies)
    try:
        run_id = cli_json(
            capsys,
            "--workspace",
            ws,
            "run",
            "--bench",
            "things-pope-adversarial",
            "--model",
            f"openai:scripted@{server.url}?retries=0",
        )["run_id"]
    finally:
        server.close()
    report = cli_json(capsys, "--workspace", ws, "report", run_id)

    with open_workspace(ws) as opened:
        stored = {p.prompt.split("thing ")[1].split(" ")[0]: p for p in runs.predictions_of(opened, run_id)}
    assert {int(k): p.response for k, p in stored.items()} == replies  # every reply stored verbatim, once

    # official: the script itself on the stored responses, in question order.
    stored_answers = write_jsonl(
        tmp_path / "stored.jsonl", [{"question_id": i, "text": stored[str(i)].response} for i in range(1, n + 1)]
    )
    expected_official = official_evaluate(stored_answers, questions)
    assert {k: report["pope"]["official"][k] for k in METRICS} == {k: expected_official[k] for k in METRICS}
    # strict: the readings written by hand in REPLIES.
    strict = Counter()
    for i in range(1, n + 1):
        reading = REPLIES[(i - 1) % len(REPLIES)][1]
        strict[
            "unknown"
            if reading == "unknown"
            else {("yes", "yes"): "tp", ("yes", "no"): "fp", ("no", "no"): "tn", ("no", "yes"): "fn"}[
                (reading, labels[i - 1])
            ]
        ] += 1
    assert {k: report["pope"]["strict"][k] for k in ("tp", "fp", "tn", "fn", "unknown")} == {
        k: strict[k] for k in ("tp", "fp", "tn", "fn", "unknown")
    }
    assert report["pope"]["official"]["unknown"] == 0 and report["pope"]["strict"]["unknown"] == 6
    assert report["pope"]["official"]["yes_ratio"] != report["pope"]["strict"]["yes_ratio"]  # they do differ
    # ... and the stored answers scored offline by `pope score` give the report's numbers under each parser.
    for parser in ("official", "strict"):
        offline = cli_json(
            capsys, "pope", "score", "--questions", questions, "--answers", stored_answers, "--parser", parser
        )
        assert {k: offline[k] for k in (*METRICS, "unknown")} == {
            k: report["pope"][parser][k] for k in (*METRICS, "unknown")
        }
    assert [parse_official(r) for r, _ in REPLIES[:3]] == ["yes", "yes", "no"]
