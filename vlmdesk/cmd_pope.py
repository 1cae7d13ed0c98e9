"""`vlmdesk pope score` and `vlmdesk pope build`: POPE answer files scored without a workspace, POPE sets built."""

from __future__ import annotations

import argparse
import json

from evaluator.scoring.pope import SETTINGS
from evaluator.types import POPE_PARSERS
from vlmdesk.args import positive_int, seed


def register_pope(add) -> None:
    p = add(
        description="POPE (Polling-based Object Probing Evaluation) without a run: score answer files that "
        "exist already, or build new question sets from object annotations. Runs of a model on "
        "an imported POPE set go through `vlmdesk run` and `vlmdesk report`.",
        examples="""
                vlmdesk pope score --questions coco_pope_random.json --answers answers.jsonl
                vlmdesk pope build --annotations instances_val2014.json --images val2014/ --setting popular \\
                    --out my_pope_popular.json --import""",
    )
    sub = p.add_subparsers(dest="pope_command", metavar="SUBCOMMAND", required=True)
    _register_score(sub)
    _register_build(sub)


def _sub(sub, name: str, *, help: str, description: str, examples: str) -> argparse.ArgumentParser:
    from vlmdesk.cli import add_command

    return add_command(sub, name, help=help, description=description, examples=examples)


def _register_score(sub) -> None:
    p = _sub(
        sub,
        "score",
        help="score POPE answer files (official or strict parser)",
        description='Score answers to POPE questions with "yes" as the positive class: tp, fp, tn, fn, '
        "unknown, accuracy, precision, recall, f1, yes_ratio (fractions in [0, 1]; null when a "
        "denominator is zero). Questions: the official format (JSON Lines or one JSON array; "
        'question_id, image, text, label). Answers: JSON Lines with the response in "answer" '
        '(or "text") and "question_id"; without ids they are paired with the questions by line '
        "order, as POPE's evaluate.py does.\n\n"
        "Parsers: strict (default) reads yes / no / unknown and counts unknown as wrong; official "
        'is POPE\'s evaluate.py exactly (first sentence, commas dropped, "No", "no" or "not" '
        "as a word means no, anything else yes).\n\n"
        "Several settings: repeat --questions and --answers, paired in the order given; the output "
        "has one row per setting and the mean over settings. Settings are named after the "
        "question files (random / popular / adversarial when each name says one, else the file "
        "names).",
        examples="""
                vlmdesk pope score --questions coco_pope_random.json --answers answers.jsonl
                vlmdesk pope score --questions coco_pope_random.json --answers answers.jsonl --parser official --json
                vlmdesk pope score --questions coco_pope_random.json --answers random.jsonl \\
                                   --questions coco_pope_popular.json --answers popular.jsonl \\
                                   --questions coco_pope_adversarial.json --answers adversarial.jsonl""",
    )
    p.add_argument(
        "--questions",
        action="append",
        required=True,
        metavar="FILE",
        help="POPE question file (repeat for several settings)",
    )
    p.add_argument(
        "--answers",
        action="append",
        required=True,
        metavar="FILE",
        help="answers JSONL for the --questions at the same position",
    )
    p.add_argument("--parser", choices=sorted(POPE_PARSERS), default="strict", help="answer parser (default: strict)")
    p.add_argument("--json", action="store_true", help="print the metrics as a JSON object")
    p.set_defaults(handler=cmd_score)


def _register_build(sub) -> None:
    p = _sub(
        sub,
        "build",
        help="build a POPE question set from object annotations",
        description="Build a POPE question set: choose --images-count images with at least --per-image "
        "distinct objects (seeded), ask about --per-image objects present and as many absent "
        "ones per image. Absent objects per setting: random (uniform over the objects of the "
        "chosen images), popular (the most frequent there), adversarial (the objects that most "
        "often co-occur with the image's objects in the whole annotation file); when a setting "
        "runs out, the next one fills in (adversarial -> popular -> random -> every object). "
        'Annotations: COCO instances_*.json, or JSON Lines {"image": "x.jpg", "objects": '
        '["dog", …]} (told apart automatically). Every chosen image must be in --images. Writes '
        "POPE's JSON Lines format (question_id, image, text, label, object); with --import also "
        "imports it into the workspace with its images.",
        examples="""
                vlmdesk pope build --annotations instances_val2014.json --images val2014/ --setting adversarial \\
                                   --out my_pope_adversarial.json
                vlmdesk pope build --annotations objects.jsonl --images photos/ --setting random --images-count 50 \\
                                   --per-image 2 --seed 1 --out photos_pope_random.json --import --name photos-random""",  # noqa: E501 (an example is one shell line, shown as written)
    )
    p.add_argument("--annotations", required=True, metavar="FILE", help="COCO instances_*.json or objects JSONL")
    p.add_argument("--images", required=True, metavar="DIR", help="folder holding the annotated images")
    p.add_argument("--setting", required=True, choices=SETTINGS, help="how absent objects are drawn")
    p.add_argument(
        "--images-count", type=positive_int, default=500, metavar="N", help="images to ask about (default 500)"
    )
    p.add_argument(
        "--per-image",
        type=positive_int,
        default=3,
        metavar="K",
        help="present and absent objects asked per image, K each (default 3)",
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the image and object choice (default 0)")
    p.add_argument("--out", required=True, metavar="FILE", help="question file to write (POPE JSON Lines)")
    p.add_argument("--import", dest="do_import", action="store_true", help="also import it into the workspace")
    p.add_argument("--name", help="benchmark name for --import (default: from the --out file name)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(handler=cmd_build)


# ------------------------------------------------------------------------------------------------------ score


def cmd_score(args) -> int:
    from evaluator.analysis.pope_report import format_scores, score_files

    scores = score_files(args.questions, args.answers, args.parser)
    print(json.dumps(scores.to_json(), ensure_ascii=False) if args.json else format_scores(scores))
    return 0


# ------------------------------------------------------------------------------------------------------ build


def cmd_build(args) -> int:
    from evaluator.formats.importers import import_benchmark
    from evaluator.formats.importers.importer import slug
    from evaluator.formats.pope_build import build_pope_set
    from evaluator.scoring.pope import write_pope_jsonl
    from vlmdesk.cli import UsageError, open_from_args, output_file

    out = output_file(args.out)
    if args.name and not args.do_import:
        raise UsageError("--name only applies with --import")
    try:
        built = build_pope_set(
            args.annotations,
            args.images,
            setting=args.setting,
            images_count=args.images_count,
            per_image=args.per_image,
            seed=args.seed,
        )
    except OSError as exc:
        raise UsageError(f"{exc.filename}: {exc.strerror}") from None
    imported = None
    if args.do_import:
        from db import catalog

        with open_from_args(args) as ws:
            name = args.name or slug(out.stem)
            existing = catalog.benchmark_by_name(ws, name)
            # Checked before writing, so a name clash leaves no file behind (same content: already imported).
            if existing is not None and existing.source_sha256 != _jsonl_sha256(built.records):
                raise UsageError(f"a different benchmark is already named {name!r}; choose another --name")
            write_pope_jsonl(built.records, out)
            try:
                imported = import_benchmark(
                    ws, out, fmt="pope", name=name, images_dir=args.images, setting=args.setting
                )
            except BaseException:
                out.unlink()  # the command failed as a whole: no question file without its import
                raise
    else:
        write_pope_jsonl(built.records, out)
    if args.json:
        print(
            json.dumps(
                {
                    "out": str(out),
                    "setting": built.setting,
                    "seed": built.seed,
                    "annotations": args.annotations,
                    "annotation_format": built.annotation_format,
                    "images": built.images,
                    "per_image": args.per_image,
                    "questions": len(built.records),
                    "import": imported and imported.to_json(),
                },
                ensure_ascii=False,
            )
        )
        return 0
    print(
        f"wrote {len(built.records)} questions ({built.setting}, {built.images} images, {args.per_image} present "
        f"+ {args.per_image} absent objects each, seed {built.seed}) to {out}"
    )
    if imported is not None and imported.already_imported:
        print(f"already imported as {imported.name!r} (same content)")
    elif imported is not None:
        print(
            f"imported {imported.name!r}: {imported.questions} questions, {imported.images} images "
            f"({imported.images_new} new); run it with: vlmdesk run --bench {imported.name} --model SPEC"
        )
    return 0


def _jsonl_sha256(records: list[dict]) -> str:
    """The SHA-256 of the file write_pope_jsonl writes for `records` (what the importer identifies it by)."""
    import hashlib

    digest = hashlib.sha256()
    for record in records:
        digest.update((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    return digest.hexdigest()
