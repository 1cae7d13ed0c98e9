"""Builders of benchmark files for tests and benches: MMBench-shaped TSVs with real JPEGs and circular copies."""

from __future__ import annotations

import base64
import csv
import io
import random
from pathlib import Path

from PIL import Image

HEADER = [
    "index",
    "question",
    "hint",
    "A",
    "B",
    "C",
    "D",
    "answer",
    "category",
    "image",
    "source",
    "l2-category",
    "comment",
    "split",
]
CATEGORIES = [
    ("image_scene", "coarse_perception"),
    ("ocr", "finegrained_perception (instance-level)"),
    ("spatial_relationship", "finegrained_perception (cross-instance)"),
    ("function_reasoning", "attribute_reasoning"),
    ("social_relation", "relation_reasoning"),
    ("future_prediction", "logic_reasoning"),
]


def jpeg_bytes(seed: int, side: int = 160, quality: int = 80) -> bytes:
    """A JPEG of random pixels (incompressible, so its size is predictable: ~18 KB at side 160, ~50 KB at 272)."""
    rng = random.Random(seed)
    img = Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def png_bytes(color=(200, 30, 30), size=(8, 8)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def mmbench_rows(
    n_questions: int, *, seed: int = 0, circular: bool = True, with_answer: bool = True, image_side: int = 160
):
    """Yield TSV rows (dicts) shaped like MMBench-dev: originals first, then rotated copies at index + k*1e6."""
    rng = random.Random(seed)
    originals = []
    for i in range(n_questions):
        n_opt = rng.choice([2, 3, 4, 4, 4])
        options = [f"option {i}-{j} {rng.choice(['red', 'blue', 'cat', 'dog', '12', '112'])}" for j in range(n_opt)]
        answer = rng.randrange(n_opt)
        cat, l2 = CATEGORIES[i % len(CATEGORIES)]
        row = {
            "index": str(i),
            "question": f"Question {i}: which option is right?",
            "hint": rng.choice(["nan", "A hint about the picture."]),
            **{L: (options[j] if j < n_opt else "") for j, L in enumerate("ABCD")},
            "answer": "ABCD"[answer] if with_answer else None,
            "category": cat,
            "image": base64.b64encode(jpeg_bytes(seed * 100_003 + i, image_side)).decode(),
            "source": "generated",
            "l2-category": l2,
            "comment": "nan",
            "split": "dev",
        }
        originals.append((row, options, answer))
        yield row
    if not circular:
        return
    for k in range(1, 4):
        for row, options, answer in originals:
            n = len(options)
            if k >= n:
                continue
            rotated = options[k:] + options[:k]
            copy = dict(
                row,
                index=str(int(row["index"]) + k * 1_000_000),
                image=row["index"],
                **{L: (rotated[j] if j < n else "") for j, L in enumerate("ABCD")},
            )
            if with_answer:
                copy["answer"] = "ABCD"[(answer - k) % n]
            yield copy


def write_tsv(path: Path, rows, header=None) -> Path:
    rows = list(rows) if header is None else rows
    header = header or HEADER
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow(["" if r.get(h) is None else r.get(h) for h in header])
    return path


def write_mmbench_tsv(path: Path, n_questions: int, **kw) -> Path:
    with_answer = kw.get("with_answer", True)
    header = HEADER if with_answer else [h for h in HEADER if h != "answer"]
    return write_tsv(path, mmbench_rows(n_questions, **kw), header=header)


# A dozen COCO-like scenes and the objects in each (16 categories in all), co-occurring the way COCO's do (person
# with almost everything, oven with sink, car with traffic light ...): the input of the POPE building tests.
POPE_SCENES = {
    "kitchen1": ["person", "oven", "sink", "cup", "apple"],
    "kitchen2": ["oven", "sink", "cup"],
    "kitchen3": ["person", "sink", "cup", "apple", "cat"],
    "street1": ["person", "car", "truck", "traffic light"],
    "street2": ["car", "traffic light", "bicycle", "person"],
    "street3": ["truck", "car", "dog"],
    "living1": ["couch", "tv", "remote", "person", "cup"],
    "living2": ["couch", "cat", "dog", "remote"],
    "living3": ["tv", "remote", "couch", "person"],
    "slope1": ["person", "skis"],
    "slope2": ["person", "skis", "dog"],
    "desk1": ["scissors", "cup", "person", "apple"],
}


def pope_scenes(suffix: str) -> dict[str, list[str]]:
    """POPE_SCENES keyed by image file name (stem + suffix)."""
    return {f"{stem}{suffix}": list(objects) for stem, objects in POPE_SCENES.items()}
