"""Items of several images asked through the real engine (issue 37): `vlmdesk run` against a scripted server on
127.0.0.1 that records each request, so every image an item holds is seen arriving, in order, where the question's
`<image N>` places it (evaluator/backends/base.py image_parts), and the VLMEvalKit presets that put images first.

Until the importers write item_images (engineer A, issue 37), the items get their second image on here: imported
with one image each, then rows inserted into item_images as the migration defines them.
"""

from __future__ import annotations

import base64
import json

import pytest

from db import open_workspace, runs
from db.catalog import image_bytes
from evaluator.backends.base import MAX_QUERY_IMAGES
from evaluator.formats.importers import import_benchmark
from tests.factories import png_bytes
from tests.servers import FaultServer
from vlmdesk.cli import main

COLOURS = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220), "grey": (128, 128, 128)}
# (question, the item's images after the first, in order): the first image is the item's own `image` cell.
ITEMS = [
    # Placed out of order, the third named by nobody: grey goes first, then the text up to <image 2>, green, …
    ("Compare <image 2> with <image 1>: which is brighter?", "red", ("green", "grey")),
    ("Which of these pictures is red?", "blue", ("red", "green")),  # no placeholder: every image first
    ("What colour is it?", "grey", ()),  # one image, as every item always was
]


def _sha_of(ws, colour: str) -> str:
    row = ws.conn.execute("SELECT image_sha256 FROM items WHERE question LIKE ?", (f"%{colour} probe%",)).fetchone()
    return row[0]


@pytest.fixture
def bench(tmp_path):
    """A workspace holding benchmark `multi` (the ITEMS, four options each) and a probe item per colour, so each
    colour's image is stored once; returns (workspace path, {colour: image bytes as stored})."""
    for name, rgb in COLOURS.items():
        (tmp_path / f"{name}.png").write_bytes(png_bytes(rgb, (8, 8)))
    rows = [
        {"index": i, "question": q, "image": f"{first}.png", "options": ["red", "green", "blue", "grey"], "answer": "A"}
        for i, (q, first, _) in enumerate(ITEMS)
    ]
    with open(tmp_path / "multi.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    with open(tmp_path / "probes.jsonl", "w") as f:
        for i, name in enumerate(COLOURS):
            probe = {"index": i, "question": f"{name} probe", "image": f"{name}.png", "options": ["a", "b"]}
            f.write(json.dumps(probe | {"answer": "A"}) + "\n")
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, tmp_path / "multi.jsonl", fmt="jsonl", name="multi")
        import_benchmark(ws, tmp_path / "probes.jsonl", fmt="jsonl", name="probes")
        shas = {name: _sha_of(ws, name) for name in COLOURS}
        with ws.conn:
            for i, (_, _, more) in enumerate(ITEMS):
                item_id = ws.conn.execute(
                    "SELECT i.id FROM items i JOIN benchmarks b ON b.id = i.benchmark_id "
                    "WHERE b.name = 'multi' AND i.source_index = ?",
                    (i,),
                ).fetchone()[0]
                ws.conn.executemany(
                    "INSERT INTO item_images (item_id, ord, sha256) VALUES (?, ?, ?)",
                    [(item_id, n, shas[c]) for n, c in enumerate(more, start=1)],
                )
        stored = {name: image_bytes(ws, sha)[0] for name, sha in shas.items()}
    return path, stored


def _run(capsys, path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(path), "run", "--bench", "multi", "--strategy", "vanilla", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _parts(body: dict, stored: dict[str, bytes]) -> list[str]:
    """A request's user content as a list: each image by its colour (decoded from its data URL and matched against
    the stored bytes; 'other' for bytes no colour has), each text as is."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return [content]
    by_bytes = {data: name for name, data in stored.items()}
    out = []
    for part in content:
        if part["type"] == "text":
            out.append(part["text"])
        else:
            url = part["image_url"]["url"]
            data = base64.b64decode(url.split(",", 1)[1])
            out.append(f"[{by_bytes.get(data, 'other')}]")
    return out


@pytest.fixture
def server():
    s = FaultServer(respond=lambda text: "A")
    yield s
    s.close()


def test_every_image_of_an_item_arrives_in_order_at_its_placeholder(bench, server, capsys):
    path, stored = bench
    code, out, err = _run(capsys, path, "--model", f"openai:m@{server.url}?retries=0", "--json")
    assert code == 0, err
    assert len(server.requests) == len(ITEMS)
    asked = {}
    for request in server.requests:
        parts = _parts(request["body"], stored)
        asked[next(p for p in parts if not p.startswith("["))[:17]] = parts
    placed = asked["Question: Compare"]
    # grey (image 3) no placeholder names: first; then the text, green where <image 2> stood, red where <image 1>.
    assert placed[:4] == ["[grey]", "Question: Compare ", "[green]", " with "]
    assert placed[4] == "[red]" and placed[5].startswith(": which is brighter?\nOptions:\nA. red")
    assert len(placed) == 6 and not any("<image" in p for p in placed)  # placeholders replaced by their images
    assert asked["Question: Which o"] == ["[blue]", "[red]", "[green]", asked["Question: Which o"][3]]
    assert asked["Question: What co"][0] == "[grey]" and len(asked["Question: What co"]) == 2
    # The stored prompt keeps the placeholders: what the run asked with, readable.
    with open_workspace(path) as ws:
        run_id = json.loads(out)["run_id"]
        prompts = {p.prompt for p in runs.predictions_of(ws, run_id)}
    assert any("Compare <image 2> with <image 1>" in p for p in prompts)


def test_a_text_only_run_sends_the_question_as_text_placeholders_and_all(bench, server, capsys):
    path, stored = bench
    code, _, err = _run(capsys, path, "--model", f"openai:m@{server.url}?retries=0", "--text-only")
    assert code == 0, err
    contents = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert all(isinstance(c, str) for c in contents)  # a plain string, as text-only runs always sent
    assert any("Compare <image 2> with <image 1>" in c for c in contents)


def test_an_image_corruption_corrupts_every_image_of_the_item(bench, server, capsys):
    path, stored = bench
    code, _, err = _run(
        capsys, path, "--model", f"openai:m@{server.url}?retries=0", "--corrupt", "image:gaussian_noise:3"
    )
    assert code == 0, err
    for request in server.requests:
        parts = _parts(request["body"], stored)
        images = [p for p in parts if p.startswith("[")]
        assert images and all(p == "[other]" for p in images)  # none sent as stored
    counts = sorted(sum(p.startswith("[") for p in _parts(r["body"], stored)) for r in server.requests)
    assert counts == [1, 3, 3]


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        # Qwen2VLChat._build_mmmu_prompt / LLaVA.build_prompt: every image first, in order; placeholders stay text.
        ("vlmevalkit:qwen2_vl", ["[red]", "[green]", "[grey]"]),
        ("vlmevalkit:llava", ["[red]", "[green]", "[grey]"]),
        # InternVLChat (reorganize_prompt): "Image-1: <image>\n…" before the text.
        ("vlmevalkit:internvl", ["Image-1: ", "[red]", "\nImage-2: ", "[green]", "\nImage-3: ", "[grey]"]),
        # The dataset's prompt (split_MMMU): placed at the placeholders.
        ("vlmevalkit:default", ["[grey]", "Question: Compare ", "[green]", " with ", "[red]"]),
    ],
)
def test_vlmevalkit_presets_place_images_as_their_class_does(bench, server, capsys, preset, expected):
    path, stored = bench
    code, _, err = _run(capsys, path, "--model", f"openai:m@{server.url}?retries=0", "--prompt", preset, "--limit", "1")
    assert code == 0, err
    (request,) = server.requests
    parts = _parts(request["body"], stored)
    assert parts[: len(expected)] == expected and len(parts) == len(expected) + 1
    if preset == "vlmevalkit:default":
        assert not any("<image" in p for p in parts)
    else:
        assert "Compare <image 2> with <image 1>" in parts[-1]


def test_an_item_of_more_images_than_a_query_sends_is_refused_in_one_line(bench, server, capsys):
    path, stored = bench
    with open_workspace(path) as ws, ws.conn:
        item_id, sha = ws.conn.execute(
            "SELECT i.id, i.image_sha256 FROM items i JOIN benchmarks b ON b.id = i.benchmark_id "
            "WHERE b.name = 'multi' AND i.source_index = 2"
        ).fetchone()
        ws.conn.executemany(
            "INSERT INTO item_images (item_id, ord, sha256) VALUES (?, ?, ?)",
            [(item_id, n, sha) for n in range(1, MAX_QUERY_IMAGES + 1)],
        )
    code, _, err = _run(capsys, path, "--model", f"openai:m@{server.url}?retries=0")
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert f"item 2: {MAX_QUERY_IMAGES + 1} images; a query sends at most {MAX_QUERY_IMAGES}" in line
    assert all(len(_parts(r["body"], stored)) < MAX_QUERY_IMAGES for r in server.requests)


def test_k_shot_examples_images_come_first_and_the_items_placeholders_name_its_own(tmp_path, server, capsys):
    """A k-shot prompt of a multi-image item: the example's images first, the item's `<image N>` renumbered past
    them, so each placeholder still places the item's own image N."""
    colours = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220), "grey": (128, 128, 128)}
    for name, rgb in colours.items():
        (tmp_path / f"{name}.png").write_bytes(png_bytes(rgb, (8, 8)))
    rows = [
        {"index": 0, "question": "Is <image 2> lighter than <image 1>?", "image": "red.png"},
        {"index": 1, "question": "Which one is blue?", "image": "blue.png"},
    ]
    with open(tmp_path / "k.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row | {"options": ["yes", "no"], "answer": "A"}) + "\n")
    for name in ("green", "grey"):  # their images stored, then given to the items as second images
        (tmp_path / f"{name}.jsonl").write_text(
            json.dumps({"index": 0, "question": name, "image": f"{name}.png", "options": ["a", "b"], "answer": "A"})
        )
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, tmp_path / "k.jsonl", fmt="jsonl", name="k")
        for name in ("green", "grey"):
            import_benchmark(ws, tmp_path / f"{name}.jsonl", fmt="jsonl", name=name)
        sha = {q: s for q, s in ws.conn.execute("SELECT question, image_sha256 FROM items")}
        ids = {q: i for q, i in ws.conn.execute("SELECT question, id FROM items")}
        with ws.conn:
            ws.conn.execute(
                "INSERT INTO item_images VALUES (?, 1, ?)", (ids["Is <image 2> lighter than <image 1>?"], sha["green"])
            )
            ws.conn.execute("INSERT INTO item_images VALUES (?, 1, ?)", (ids["Which one is blue?"], sha["grey"]))
        stored = {name: image_bytes(ws, sha[name])[0] for name in ("green", "grey")}
        stored |= {
            "red": image_bytes(ws, sha[rows[0]["question"]])[0],
            "blue": image_bytes(ws, sha[rows[1]["question"]])[0],
        }
    code = main(
        [
            "--workspace",
            str(path),
            "run",
            "--bench",
            "k",
            "--strategy",
            "vanilla",
            "--limit",
            "1",
            "--shots",
            "1",
            "--shot-selection",
            "fixed",
            "--model",
            f"openai:m@{server.url}?retries=0",
        ]
    )
    assert code == 0, capsys.readouterr().err
    (request,) = server.requests
    parts = _parts(request["body"], stored)
    # The example's blue and grey first (no placeholder names them), then the item's question with green where its
    # <image 2> (now <image 4>) stands and red where its <image 1> (now <image 3>) stands.
    assert [p for p in parts if p.startswith("[")] == ["[blue]", "[grey]", "[green]", "[red]"]
    assert parts[:2] == ["[blue]", "[grey]"] and parts[2].endswith("Question: Is ")
    assert parts[3:6] == ["[green]", " lighter than ", "[red]"]
    assert not any("<image" in p for p in parts)
