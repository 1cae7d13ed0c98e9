"""Building a POPE question set from an annotation file and an image folder: the steps the CLI and the GUI share.

`evaluator.scoring.pope.build_pope` does the sampling; this module reads the annotations (COCO `instances_*.json` or a
JSONL of image -> objects, told apart by their first record) and checks that every chosen image is really in
the folder, so an imported set never refers to a picture that is not there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from db.errors import InvalidInput
from evaluator.formats.importers.common import open_input
from evaluator.scoring.pope import MAX_COCO_BYTES, build_pope, load_coco_instances, load_object_jsonl

ANNOTATION_FORMATS = ("coco", "objects-jsonl")
# A JSONL record is one short line; a COCO file is one huge object (often on one line): read only this much.
_HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class BuiltSet:
    """A built POPE set and where it came from."""

    records: list[dict[str, Any]]
    annotation_format: str  # one of ANNOTATION_FORMATS
    images: int  # distinct images asked about
    setting: str
    seed: int


def annotation_format(path: str | os.PathLike[str]) -> str:
    """ "objects-jsonl" when the first line is a complete {"image": …, "objects": …} record, else "coco"."""
    with open_input(path, MAX_COCO_BYTES, "limit for an annotation file") as file:
        head = file.read(_HEAD_BYTES)
    first = head.lstrip().split(b"\n", 1)
    if len(first) == 2 or len(head) < _HEAD_BYTES:  # the first line is complete
        try:
            record = json.loads(first[0])
        except (json.JSONDecodeError, UnicodeDecodeError):
            return "coco"  # a pretty-printed COCO file starts with a lone "{"; its reader names the real error
        if isinstance(record, dict) and "image" in record and "objects" in record:
            return "objects-jsonl"
    return "coco"


def load_annotations(path: str | os.PathLike[str]) -> tuple[str, dict[str, list[str]]]:
    """(format, image -> objects present). InvalidInput names the file (and line) of bad input."""
    path = Path(path)
    fmt = annotation_format(path)  # refuses what is not a regular file, or too big, before anything is read
    try:
        return fmt, (load_object_jsonl(path) if fmt == "objects-jsonl" else load_coco_instances(path))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start})") from None


def missing_images(records: list[dict[str, Any]], images_dir: str | os.PathLike[str]) -> list[str]:
    """The distinct images of `records` (in order) that are not files inside `images_dir`."""
    images_dir = Path(images_dir)
    names = dict.fromkeys(r["image"] for r in records)
    return [name for name in names if not (images_dir / name).is_file()]


def build_pope_set(
    annotations_path: str | os.PathLike[str],
    images_dir: str | os.PathLike[str],
    *,
    setting: str,
    images_count: int,
    per_image: int,
    seed: int,
) -> BuiltSet:
    """Reads the annotations, builds the set and checks its images; InvalidInput on any problem (nothing written)."""
    images_dir = Path(images_dir)
    if not images_dir.is_dir():
        raise InvalidInput(f"{images_dir}: no such directory (--images)")
    fmt, annotations = load_annotations(annotations_path)
    records = build_pope(annotations, setting=setting, images_count=images_count, per_image=per_image, seed=seed)
    missing = missing_images(records, images_dir)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        chosen = len({r["image"] for r in records})
        raise InvalidInput(
            f"{images_dir}: {len(missing)} of the {chosen} chosen images are not in this folder: {shown}"
        )
    return BuiltSet(records, fmt, len({r["image"] for r in records}), setting, seed)
