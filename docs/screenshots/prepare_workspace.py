"""Build the workspace the screenshots of docs/gui.md are taken from (`python docs/screenshots/prepare_workspace.py
OUT.sqlite`): the demo benchmarks, baseline runs, a QC stage, an adjudication set with two annotators' labels so
the Alignment view has something to show, and a few review verdicts (one conflict, with a note) so that Browse, the
Review history and blind mode have something to show and hide. Everything goes through `vlmdesk` commands except
the labels and verdicts, which stand in for people: annotators "ana" and "ben" label every response as the rules
read it, a few otherwise, and a lead adjudicates three of their disagreements."""

from __future__ import annotations

import sys
from pathlib import Path

from annotation import alignment, arena, guidelines, reviews, saved_filters
from db import catalog, open_workspace
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo


def vlmdesk(*args: str) -> None:
    if main(["--workspace", str(PATH), *args]) != 0:
        sys.exit(f"vlmdesk {' '.join(args)} failed")


PATH = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots.sqlite")
if PATH.exists():
    sys.exit(f"{PATH} exists; give a new file name")
with open_workspace(PATH) as ws:
    ensure_demo(ws)
for model in ("baseline:random", "baseline:first", "baseline:frequent"):
    vlmdesk("run", "--bench", "demo", "--model", model)  # runs 1-3
vlmdesk("run", "--bench", "demo", "--model", "baseline:random?seed=7", "--full-passes")  # run 4
vlmdesk("run", "--bench", "demo-pope", "--model", "baseline:random")  # run 5
vlmdesk("run", "--bench", "demo-pope", "--model", "baseline:frequent")  # run 6
vlmdesk("qc", "consensus", "--bench", "demo", "--run", "1", "--run", "2")
vlmdesk("models", "add", "coin", "baseline:random")
vlmdesk("models", "add", "always-A", "baseline:first")
# A weak "LLM" extractor (a baseline that always answers the first letter) gives the study a second extractor.
vlmdesk(
    "align",
    "sample",
    "--run",
    "1",
    "--run",
    "4",
    "--extractor",
    "llm:baseline:first",
    "--size",
    "40",
    "--seed",
    "1",
    "--name",
    "demo-study",
)
with open_workspace(PATH) as ws:
    for n in range(1000):  # every response of the set, so that ana sees all passes (blind adjudication)
        task = alignment.next_for(ws, "demo-study", "ana")
        if task is None:
            break
        said = alignment.RulesExtractor().extract_many([(task.question, task.options, task.response)])[0].choice
        alignment.add_label(ws, task.item_id, "ana", "Z" if n % 13 == 6 else (said or "unclear"), seconds=4.0)
        other = "Z" if n % 9 == 4 else (said or "unclear")
        alignment.add_label(ws, task.item_id, "ben", other, seconds=5.0)
    for d in alignment.disagreements(ws, "demo-study")[:3]:
        alignment.adjudicate(ws, d.item_id, "lead", d.labels["ana"], note="read again")
    demo = {i.index: i.id for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)}
    for index, who, verdict, corrected, note in (
        (1, "ana", "ok", None, None),
        (3, "ana", "ok", None, None),
        (3, "ben", "ok", None, None),
        (2, "ben", "ambiguous", None, "both descriptions fit a shallow depth of field"),
        (5, "ana", "ok", None, None),
        (5, "ben", "wrong_answer", "B", "the mission patch reads STS-7: Sally Ride?"),
    ):
        reviews.add_review(ws, demo[index], who, verdict, corrected_answer=corrected, note=note, seconds=6.0)
    guidelines.save(
        ws,
        catalog.benchmark_by_name(ws, "demo").id,
        "# Reviewing the demo\n\n"
        "- **ok** — the key is the one answer a careful reader would give from the image and the text.\n"
        "- **wrong key** — another option is right: pick it (1–9) after W.\n"
        "- **ambiguous** — two options fit equally; say which in a note (E).\n"
        "- **text-answerable** — the question can be answered without looking at the image.\n"
        "- **bad image** — too small, cropped or unrelated to read the answer.\n\n"
        "When unsure, **skip** (S): a skip is not a verdict.",
        "lead",
    )
    saved_filters.save(ws, "CP to review", {"l2_category": "coarse_perception", "review": "unreviewed"}, "lead")
# The arena: three baselines answer the open questions (runs 7-9; each answers with a letter, standing in for free
# answers), two pairs per item, and ana and ben vote (people's taste stood in for by a fixed preference).
for model in ("baseline:random", "baseline:first", "baseline:frequent"):
    vlmdesk("run", "--bench", "demo-open", "--model", model)
vlmdesk("arena", "pairs", "--bench", "demo-open", "--runs", "7", "8", "9", "--per-item", "2", "--seed", "1")
with open_workspace(PATH) as ws:
    prefer = {7: 2, 8: 0, 9: 1}  # run -> rank (0 best)
    for n, pair in enumerate(arena.pairs(ws)):
        left, right = prefer[pair.left_run_id], prefer[pair.right_run_id]
        for who in ("ana", "ben"):
            vote = "tie" if (n + len(who)) % 5 == 0 else "left" if left < right else "right"
            arena.add_vote(ws, pair.id, who, vote, seconds=9.0)
# A live battle (Arena › Live): the two saved baselines, drawn by matchmaking, answer a question about the
# motorcycle photo; left unvoted, so the page shows it anonymous.
photo = Path(__file__).resolve().parents[2] / "assets" / "demo" / "images" / "motorcycle.jpg"
vlmdesk("arena", "ask", "--image", str(photo), "--question", "What is unusual about this motorcycle?", "--json")
print(f"wrote {PATH}")
