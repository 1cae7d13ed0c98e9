"""The extractor–human alignment study: adjudication sets, blind labels, adjudication, final labels, figures.

An adjudication set is built from one or more runs: every distinct (question, options as shown, response) where
the extractors disagree or the rules are undecided, plus a seeded random sample of the rest. What each extractor
said is stored with the set but handed to an annotator only after that annotator's label on the item is committed:
`next_for` returns question, options and response only; `reveal` refuses before a label exists.

Labels and adjudications are append-only (triggers); an annotator's newest label on an item is the one that stands.
The final label of an item: the newest adjudication, else the majority of the standing labels (a tie has none).
"""
from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

from annotation import agreement
from db.catalog import now_iso
from db.workspace import Workspace
from evaluator.extraction import REFUSAL, Extraction
from evaluator.llm_extraction import ExtractionInput, Extractor, RulesExtractor, response_key
from evaluator.rescoring import UNLABELLED, stored_passes

UNCLEAR = "unclear"
UNDECIDED = "undecided"  # how an extractor's "no choice" appears in confusion matrices
WHY = ("undecided", "disagree", "sample")


class NotLabelledYet(PermissionError):
    """Extractor outputs are shown to an annotator only after their own label on the item is committed."""


@dataclass(frozen=True)
class AdjudicationSet:
    id: int
    name: str
    run_ids: tuple[int, ...]
    extractors: tuple[str, ...]
    sample_size: int
    seed: int
    created_at: str
    items: int
    by_why: dict


@dataclass(frozen=True)
class LabelTask:
    """What a labeller sees: never an extractor's output."""

    item_id: int
    set_name: str
    position: int
    question: str
    options: dict[str, str]
    response: str
    done: int  # items this annotator has labelled in the set
    total: int


@dataclass(frozen=True)
class Label:
    id: int
    item_id: int
    annotator: str
    choice: str
    seconds: float | None
    created_at: str


@dataclass(frozen=True)
class FinalLabel:
    choice: str | None  # a letter, Z, "unclear"; None for a tie that awaits adjudication
    source: str  # adjudicated | majority | tie


# --- building a set --------------------------------------------------------------------------------------


def build_set(ws: Workspace, name: str, run_ids: Sequence[int], extractors: Sequence[Extractor], *, size: int,
              seed: int) -> AdjudicationSet:
    """Collect, de-duplicate, read with every extractor (rules always among them), select, store — one transaction."""
    name = name.strip()
    if not name:
        raise ValueError("an adjudication set needs a name")
    if ws.conn.execute("SELECT 1 FROM adjudication_sets WHERE name = ?", (name,)).fetchone():
        raise ValueError(f"an adjudication set named {name!r} exists already")
    if size < 0:
        raise ValueError("the sample size must be 0 or more")
    if not run_ids:
        raise ValueError("an adjudication set needs at least one run")
    readers = {e.name: e for e in [RulesExtractor(), *extractors]}
    distinct: dict[str, ExtractionInput] = {}
    sources: dict[str, list[list[int]]] = defaultdict(list)
    for run_id in dict.fromkeys(run_ids):
        for sp in stored_passes(ws, run_id):
            key = response_key(*sp.input)
            distinct.setdefault(key, sp.input)
            sources[key].append([run_id, sp.prediction.item_id, sp.prediction.pass_])
    keys = sorted(distinct)
    inputs = [distinct[k] for k in keys]
    outputs = {n: dict(zip(keys, e.extract_many(inputs))) for n, e in readers.items()}
    why: dict[str, str] = {}
    rest = []
    for k in keys:
        if outputs["rules"][k].choice is None:
            why[k] = "undecided"
        elif len({outputs[n][k].choice for n in readers}) > 1:
            why[k] = "disagree"
        else:
            rest.append(k)
    rng = random.Random(seed)
    for k in rng.sample(rest, min(size, len(rest))):
        why[k] = "sample"
    chosen = sorted(why)
    rng.shuffle(chosen)  # hard cases are not shown first: annotators must not guess why an item is there
    now = now_iso()
    with ws.db.atomic():
        set_id = ws.conn.execute(
            "INSERT INTO adjudication_sets (name, run_ids, extractors, sample_size, seed, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (name, json.dumps(list(dict.fromkeys(run_ids))), json.dumps(list(readers)), size, seed, now)).lastrowid
        for position, k in enumerate(chosen):
            question, options, response = distinct[k]
            item_id = ws.conn.execute(
                "INSERT INTO adjudication_items (set_id, position, response_key, question, options, response, why, "
                "sources) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (set_id, position, k, question, json.dumps(dict(sorted(options.items())), ensure_ascii=False),
                 response, why[k], json.dumps(sources[k]))).lastrowid
            ws.conn.executemany(
                "INSERT INTO adjudication_outputs (item_id, extractor, choice, stage, reason) VALUES (?, ?, ?, ?, ?)",
                [(item_id, n, outputs[n][k].choice, outputs[n][k].stage, outputs[n][k].reason) for n in readers])
    return get_set(ws, name)


def get_set(ws: Workspace, name: str) -> AdjudicationSet | None:
    row = ws.conn.execute("SELECT id, name, run_ids, extractors, sample_size, seed, created_at FROM adjudication_sets "
                          "WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    whys = dict(ws.conn.execute("SELECT why, count(*) FROM adjudication_items WHERE set_id = ? GROUP BY why",
                                (row[0],)).fetchall())
    return AdjudicationSet(row[0], row[1], tuple(json.loads(row[2])), tuple(json.loads(row[3])), row[4], row[5],
                           row[6], sum(whys.values()), {w: whys.get(w, 0) for w in WHY})


def list_sets(ws: Workspace) -> list[AdjudicationSet]:
    return [get_set(ws, n) for (n,) in ws.conn.execute("SELECT name FROM adjudication_sets ORDER BY id")]


def _set_or_fail(ws: Workspace, name: str) -> AdjudicationSet:
    found = get_set(ws, name)
    if found is None:
        raise LookupError(f"no adjudication set named {name!r}")
    return found


# --- blind labelling -------------------------------------------------------------------------------------


def next_for(ws: Workspace, set_name: str, annotator: str) -> LabelTask | None:
    """The next item of the set this annotator has not labelled (question, options, response only)."""
    s = _set_or_fail(ws, set_name)
    annotator = _annotator(annotator)
    done = ws.conn.execute("SELECT count(DISTINCT l.item_id) FROM labels l JOIN adjudication_items i ON i.id = "
                           "l.item_id WHERE i.set_id = ? AND l.annotator = ?", (s.id, annotator)).fetchone()[0]
    row = ws.conn.execute(
        "SELECT id, position, question, options, response FROM adjudication_items i WHERE set_id = ? AND NOT EXISTS "
        "(SELECT 1 FROM labels l WHERE l.item_id = i.id AND l.annotator = ?) ORDER BY position LIMIT 1",
        (s.id, annotator)).fetchone()
    if row is None:
        return None
    return LabelTask(row[0], s.name, row[1], row[2], json.loads(row[3]), row[4], done, s.items)


def add_label(ws: Workspace, item_id: int, annotator: str, choice: str, *, seconds: float | None = None) -> Label:
    """Commit an annotator's reading of a response: an option letter, Z (none of the options) or "unclear"."""
    annotator = _annotator(annotator)
    choice = _valid_choice(ws, item_id, choice)
    created = now_iso()
    with ws.db.atomic():
        label_id = ws.conn.execute(
            "INSERT INTO labels (item_id, annotator, choice, seconds, created_at) VALUES (?, ?, ?, ?, ?)",
            (item_id, annotator, choice, seconds, created)).lastrowid
    return Label(label_id, item_id, annotator, choice, seconds, created)


def reveal(ws: Workspace, item_id: int, annotator: str) -> dict[str, Extraction]:
    """What the extractors said about an item — only to an annotator who has labelled it."""
    annotator = _annotator(annotator)
    if not ws.conn.execute("SELECT 1 FROM labels WHERE item_id = ? AND annotator = ?", (item_id, annotator)).fetchone():
        raise NotLabelledYet(f"{annotator} has not labelled item {item_id}; extractor outputs are shown only after "
                             "the label is committed")
    return _outputs(ws, item_id)


def _outputs(ws: Workspace, item_id: int) -> dict[str, Extraction]:
    rows = ws.conn.execute("SELECT extractor, choice, stage, reason FROM adjudication_outputs WHERE item_id = ? "
                           "ORDER BY rowid", (item_id,))
    return {r[0]: Extraction(r[1], r[2], r[3]) for r in rows}


def _annotator(name: str) -> str:
    if not name or not name.strip():
        raise ValueError("an annotator name is required")
    return name.strip()


def _valid_choice(ws: Workspace, item_id: int, choice: str) -> str:
    row = ws.conn.execute("SELECT options FROM adjudication_items WHERE id = ?", (item_id,)).fetchone()
    if row is None:
        raise LookupError(f"no adjudication item {item_id}")
    options = json.loads(row[0])
    text = (choice or "").strip()
    if text.lower() == UNCLEAR:
        return UNCLEAR
    if text.upper() in options or text.upper() == REFUSAL:
        return text.upper()
    raise ValueError(f"{choice!r} is not a label: one of {', '.join(options)}, Z (none of them) or unclear")


# --- standing labels, disagreements, adjudication, final labels -----------------------------------------


def standing_labels(ws: Workspace, set_name: str) -> dict[int, dict[str, str]]:
    """Per item of the set: annotator → their newest label."""
    s = _set_or_fail(ws, set_name)
    out: dict[int, dict[str, str]] = defaultdict(dict)
    for item_id, annotator, choice in ws.conn.execute(
            "SELECT l.item_id, l.annotator, l.choice FROM labels l JOIN adjudication_items i ON i.id = l.item_id "
            "WHERE i.set_id = ? ORDER BY l.id", (s.id,)):
        out[item_id][annotator] = choice
    return dict(out)


def _adjudicated(ws: Workspace, set_id: int) -> dict[int, str]:
    rows = ws.conn.execute("SELECT a.item_id, a.choice FROM adjudications a JOIN adjudication_items i ON "
                           "i.id = a.item_id WHERE i.set_id = ? ORDER BY a.id", (set_id,))
    return dict(rows.fetchall())  # newest wins


@dataclass(frozen=True)
class Disagreement:
    item_id: int
    position: int
    labels: dict[str, str]
    adjudicated: str | None


def disagreements(ws: Workspace, set_name: str) -> list[Disagreement]:
    """Items whose annotators' standing labels differ (adjudicated or not)."""
    s = _set_or_fail(ws, set_name)
    adjudicated = _adjudicated(ws, s.id)
    positions = dict(ws.conn.execute("SELECT id, position FROM adjudication_items WHERE set_id = ?", (s.id,)).fetchall())
    return [Disagreement(item, positions[item], labels, adjudicated.get(item))
            for item, labels in sorted(standing_labels(ws, set_name).items(), key=lambda kv: positions[kv[0]])
            if len(set(labels.values())) > 1]


def adjudicate(ws: Workspace, item_id: int, adjudicator: str, choice: str, *, note: str | None = None) -> None:
    """Record the final label of an item (a newer adjudication supersedes an older one)."""
    adjudicator = _annotator(adjudicator)
    choice = _valid_choice(ws, item_id, choice)
    with ws.db.atomic():
        ws.conn.execute("INSERT INTO adjudications (item_id, adjudicator, choice, note, created_at) "
                        "VALUES (?, ?, ?, ?, ?)", (item_id, adjudicator, choice, note, now_iso()))


def final_labels(ws: Workspace, set_name: str) -> dict[int, FinalLabel]:
    """Per labelled (or adjudicated) item: the adjudicated label, else the majority of standing labels."""
    s = _set_or_fail(ws, set_name)
    adjudicated = _adjudicated(ws, s.id)
    out: dict[int, FinalLabel] = {item: FinalLabel(choice, "adjudicated") for item, choice in adjudicated.items()}
    for item, labels in standing_labels(ws, set_name).items():
        if item in out:
            continue
        (top, n), *others = Counter(labels.values()).most_common()
        out[item] = FinalLabel(None, "tie") if others and others[0][1] == n else FinalLabel(top, "majority")
    return out


def final_labels_by_response(ws: Workspace) -> dict[str, str]:
    """response_key → final human label over every set (a later set's decided label wins over an earlier one's)."""
    out: dict[str, str] = {}
    for s in list_sets(ws):
        keys = dict(ws.conn.execute("SELECT id, response_key FROM adjudication_items WHERE set_id = ?",
                                    (s.id,)).fetchall())
        for item, final in final_labels(ws, s.name).items():
            if final.choice is not None:
                out[keys[item]] = final.choice
    return out


class HumanLabels:
    """Re-scoring by people: the final label where a response has one; stage ``unlabelled`` elsewhere."""

    name = "human"

    def __init__(self, ws: Workspace):
        self.labels = final_labels_by_response(ws)

    def extract_many(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        out = []
        for question, options, response in inputs:
            label = self.labels.get(response_key(question, options, response))
            if label is None:
                out.append(Extraction(None, UNLABELLED, "no final human label"))
            elif label == UNCLEAR:
                out.append(Extraction(None, "human", "people could not tell which option"))
            else:
                out.append(Extraction(label, "human", "final human label"))
        return out


# --- figures ---------------------------------------------------------------------------------------------


def _rate(agreed: int, n: int) -> dict:
    ci = agreement.wilson_interval(agreed, n)
    return {"n": n, "agreed": agreed, "rate": agreed / n if n else None,
            "wilson_95": list(ci) if ci else None}


def alignment_report(ws: Workspace, set_name: str) -> dict:
    """Per extractor: alignment with the final human labels (Wilson 95 %), Cohen's κ, confusion matrix; then
    inter-annotator agreement, the open disagreements and progress. Items whose final label is "unclear" or a tie
    are left out of the extractor figures (counted)."""
    s = _set_or_fail(ws, set_name)
    items = {r[0]: r[1] for r in ws.conn.execute("SELECT id, why FROM adjudication_items WHERE set_id = ?", (s.id,))}
    finals = final_labels(ws, set_name)
    readable = {i: f.choice for i, f in finals.items() if f.choice not in (None, UNCLEAR)}
    extractors = {}
    outputs = {i: _outputs(ws, i) for i in readable}
    for name in s.extractors:
        human = [readable[i] for i in sorted(readable)]
        said = [outputs[i][name].choice or UNDECIDED for i in sorted(readable)]
        agreed = sum(h == e for h, e in zip(human, said))
        by_why = {}
        for why in WHY:
            pairs = [(readable[i], outputs[i][name].choice or UNDECIDED) for i in sorted(readable) if items[i] == why]
            by_why[why] = _rate(sum(h == e for h, e in pairs), len(pairs))
        extractors[name] = {**_rate(agreed, len(human)), "cohen_kappa": agreement.cohen_kappa(human, said),
                            "confusion": agreement.confusion(human, said).to_json(), "by_why": by_why}
    standing = standing_labels(ws, set_name)
    annotators = sorted({a for labels in standing.values() for a in labels})
    multi = [labels for labels in standing.values() if len(labels) >= 2]
    inter: dict = {"annotators": annotators, "items_with_two_or_more": len(multi),
                   "percent_agreement": (sum(len(set(l.values())) == 1 for l in multi) / len(multi)) if multi else None,
                   "cohen_kappa": None, "krippendorff_alpha": agreement.krippendorff_alpha(list(standing.values()))}
    if len(annotators) == 2:
        both = [labels for labels in multi if set(labels) == set(annotators)]
        inter["cohen_kappa"] = agreement.cohen_kappa([l[annotators[0]] for l in both], [l[annotators[1]] for l in both])
    return {
        "set": s.name, "runs": list(s.run_ids), "seed": s.seed, "sample_size": s.sample_size, "items": s.items,
        "by_why": s.by_why, "labelled": len(standing),
        "progress": {a: sum(a in labels for labels in standing.values()) for a in annotators},
        "final": {"decided": len(readable), "unclear": sum(f.choice == UNCLEAR for f in finals.values()),
                  "ties": sum(f.source == "tie" for f in finals.values()),
                  "adjudicated": sum(f.source == "adjudicated" for f in finals.values())},
        "extractors": extractors, "inter_annotator": inter,
        "disagreements": [{"item_id": d.item_id, "position": d.position, "labels": d.labels,
                           "adjudicated": d.adjudicated} for d in disagreements(ws, set_name)],
    }
