"""`vlmdesk models …`: the saved models of a workspace (add, list, remove) and a smoke test of one."""

from __future__ import annotations

import json
import sys

from evaluator.backends import REGISTRY


def register_models(add) -> None:
    from vlmdesk.cli import add_command, model_specs_help

    p = add(
        description="Models kept in the workspace under a short name, for the app's launcher and for "
        "`vlmdesk run --model NAME`. An openai: spec names the environment variable holding its "
        "key (key_env=NAME); keys themselves are refused, never stored.\n\n" + model_specs_help(),
        examples="""
                vlmdesk models add llava-7b 'hf:llava-hf/llava-1.5-7b-hf?dtype=bfloat16'
                vlmdesk models add local-vllm 'openai:Qwen2-VL-7B@http://localhost:8000/v1?key_env=VLLM_KEY'
                vlmdesk models add coin baseline:random
                vlmdesk models list --json
                vlmdesk models test llava-7b --json
                vlmdesk models remove coin""",
    )
    sub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    def action(name, help, handler, example):
        return add_command(sub, name, help=help, handler=handler, examples=example)

    q = action(
        "add",
        "save a model spec under a name",
        cmd_add,
        "vlmdesk models add llava-7b 'hf:llava-hf/llava-1.5-7b-hf?dtype=bfloat16'",
    )
    q.add_argument("name", help="a short name (letters, digits, spaces, . @ / + - _; no colon)")
    schemes = ", ".join(f"{e.name}:…" for e in REGISTRY.help_entries())
    q.add_argument("spec", help=f"a model spec ({schemes}; see above)")
    q.add_argument("--note", help="a free note (no keys)")
    q.add_argument("--json", action="store_true", help="print the saved model as JSON")
    q = action("list", "list the saved models", cmd_list, "vlmdesk models list --json")
    q.add_argument("--json", action="store_true", help="print a JSON array")
    q = action("remove", "forget a saved model (its runs are kept)", cmd_remove, "vlmdesk models remove coin")
    q.add_argument("name", help="the saved model's name")
    q = action(
        "test",
        "load a model (or reach its server) and answer one item of the demo benchmark",
        cmd_test,
        "vlmdesk models test llava-7b --json",
    )
    q.add_argument("model", help="a saved model's name or a model spec")
    q.add_argument("--bench", help="benchmark to take the item from (default: demo, else the first multiple-choice)")
    q.add_argument("--item", help="item index (default: the benchmark's first)")
    q.add_argument("--json", action="store_true", help="print the result as one JSON object")
    q = action(
        "families",
        "the model families verified on the hf: backend (generation, likelihood, POPE, prefix sharing)",
        cmd_families,
        "vlmdesk models families --json",
    )
    q.add_argument("--json", action="store_true", help="print a JSON array, one object per family")


def cmd_families(args) -> int:
    from evaluator.backends.families import FAMILIES

    if args.json:
        print(json.dumps([f.to_json() for f in FAMILIES], ensure_ascii=False))
        return 0
    print(f"{'family':<18} {'model_type':<16} {'gen lik pope':<13} {'prefix sharing':<15} try first")
    for f in FAMILIES:
        share = "on" if f.share_prefix else "off"
        print(f"{f.name:<18} {f.model_type:<16} {'✔   ✔   ✔':<13} {share:<15} {f.checkpoint}")
    off = [f for f in FAMILIES if not f.share_prefix]
    if off:
        print("\nprefix sharing off (each run stores why):")
        for f in off:
            print(f"  {f.model_type}: {f.share_off}")
    print("\nother model types run through the generic path and say once that they are unverified")
    return 0


def cmd_add(args) -> int:
    from db import models
    from evaluator.engine.model_check import validate_spec
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        saved = models.add_model(ws, args.name, validate_spec(args.spec), note=args.note)
    if args.json:
        print(json.dumps(saved.to_json(), ensure_ascii=False))
    else:
        print(f"saved {saved.name}: {saved.spec}")
    return 0


def cmd_list(args) -> int:
    from db import models
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        saved = models.list_models(ws)
    if args.json:
        print(json.dumps([m.to_json() for m in saved], ensure_ascii=False))
        return 0
    if not saved:
        print("no saved models: vlmdesk models add NAME SPEC")
    for m in saved:
        print(f"{m.name:<24} {m.spec}")
    return 0


def cmd_remove(args) -> int:
    from db import models
    from vlmdesk.cli import UsageError, open_from_args

    with open_from_args(args) as ws:
        if not models.remove_model(ws, args.name):
            raise UsageError(f"no saved model named {args.name!r}")
    print(f"removed {args.name}")
    return 0


def cmd_test(args) -> int:
    from evaluator.backends import BackendError
    from evaluator.engine.launch import resolve_model
    from evaluator.engine.model_check import check_model
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        spec = resolve_model(ws, args.model)
        try:
            result = check_model(ws, spec, benchmark=args.bench, item_index=args.item)
        except BackendError as exc:
            print(f"error: {spec}: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return 0
    verdict = {True: "right", False: "wrong", None: "unscored"}[result.correct]
    print(f"{result.spec}: loaded in {result.load_s:.1f} s, answered in {result.answer_s:.2f} s")
    print(
        f"item {result.item_index} of {result.benchmark}: response {result.response!r} → "
        f"{result.choice or 'undecided'} ({verdict}; key {result.answer})"
    )
    return 0
