"""A suite plan file (TOML or YAML): models × benchmarks × settings, read and its shape checked (docs/guide/suites.md).

The file names settings for every run (`settings`), models (`model`: a table each, or `models`: a list of specs) and
benchmarks (`benchmark` / `benchmarks` likewise); a model's or a benchmark's own `settings` override the plan's, and
a model's override a benchmark's (defaults < benchmark < model). Its runs are each model × each benchmark, models in
the file's order, each model's benchmarks in the file's order (`Plan.entries`).

This module checks what it can tell from the file alone: the syntax, the keys of the plan and of its entries, the
kinds of values (a setting is true/false, a number, a text or a list of numbers and texts), the bounds (MAX_BYTES,
MAX_RUNS). Whether a setting is a `vlmdesk run` option of the right type, a benchmark exists and a spec is read by a
backend is checked against the run command itself (vlmdesk/cmd_plan.py). Every refusal is an InputError naming the
file, the line and the field (`suite.toml:7: model[2].settings.temprature: …`); fields count entries from 1.

tomllib gives no positions: a key's line is found by scanning the text within its table (`_toml_lines`); YAML's
come from the composed nodes.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from evaluator.formats.importers.common import InputError, read_input_text

MAX_BYTES: Final = 1024 * 1024  # a plan is a few hundred lines; a megabyte is far past any
MAX_RUNS: Final = 500  # models × benchmarks: past this a plan is a mistake (a list pasted twice), not a suite
MAX_TEXT: Final = 256 * 1024  # one setting's text (a system prompt is at most 64 K characters: runner.MAX_SYSTEM_CHARS)
SUFFIXES: Final = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}

_TOP = ("settings", "model", "models", "benchmark", "benchmarks")
_MODEL_KEYS = ("spec", "name", "settings")
_BENCH_KEYS = ("name", "settings")

Path_ = tuple[str | int, ...]  # a place in the file: keys and 0-based list indices


@dataclass(frozen=True)
class Setting:
    """One `vlmdesk run` option as a plan gives it: `key` with underscores (max_new_tokens), `value` as read
    (bool, int, float, str or a list of int/float/str), and where it is (`field` as the message names it, `line`)."""

    key: str
    value: Any
    field: str
    line: int

    @property
    def written(self) -> str:
        """The key as the file writes it (the last part of `field`)."""
        return self.field.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class PlanModel:
    spec: str  # a spec or a saved model's name, as written
    label: str  # the suite table's row: `name`, else the spec
    settings: tuple[Setting, ...]
    field: str  # model[2] / models[2]
    line: int
    spec_field: str
    spec_line: int


@dataclass(frozen=True)
class PlanBenchmark:
    name: str
    settings: tuple[Setting, ...]
    field: str
    line: int
    name_field: str
    name_line: int


@dataclass(frozen=True)
class PlanEntry:
    """One run of the plan: a model on a benchmark with its settings merged (plan < benchmark < model), in the order
    they were first given."""

    model: PlanModel
    benchmark: PlanBenchmark
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class Plan:
    file: str
    settings: tuple[Setting, ...]
    models: tuple[PlanModel, ...]
    benchmarks: tuple[PlanBenchmark, ...]

    def entries(self) -> list[PlanEntry]:
        """Each model × each benchmark: models in the file's order, each one's benchmarks in the file's order."""
        found = []
        for model in self.models:
            for bench in self.benchmarks:
                merged: dict[str, Setting] = {}
                for s in (*self.settings, *bench.settings, *model.settings):
                    merged[s.key] = s  # a later level replaces the value, keeping the first one's place
                found.append(PlanEntry(model, bench, tuple(merged.values())))
        return found


def plan_format(name: str | Path) -> str | None:
    """ "toml" or "yaml" by the file's suffix; None for another."""
    return SUFFIXES.get(Path(name).suffix.lower())


def read_plan_text(path: str | Path) -> str:
    """The text of the plan file `path`, read through the bounded door (MAX_BYTES, UTF-8). A file of another suffix
    is refused before it is opened: in a process that holds a workspace, reading the workspace file itself would
    close a descriptor of it (docs/adr/0023)."""
    if plan_format(path) is None:
        raise InputError(path, 0, "plan", "a plan file is .toml, .yaml or .yml")
    return read_input_text(path, MAX_BYTES, "limit for a plan file", "plan")


def read_plan(path: str | Path) -> Plan:
    """The plan in the file `path` (read_plan_text), checked for its shape."""
    return parse_plan(read_plan_text(path), str(path))


def parse_plan(text: str, file: str) -> Plan:
    """The plan `text` holds, `file` naming it in messages (and its suffix choosing TOML or YAML)."""
    fmt = plan_format(file)
    if fmt is None:
        raise InputError(file, 0, "plan", "a plan file is .toml, .yaml or .yml")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise InputError(file, 0, "plan", f"over the limit for a plan file of {MAX_BYTES // 1024 // 1024} MB")
    data, lines = _load_toml(text, file) if fmt == "toml" else _load_yaml(text, file)
    return _Reader(file, lines).plan(data)


# --- the two syntaxes -------------------------------------------------------------------------------------------


def _load_toml(text: str, file: str) -> tuple[Any, dict[Path_, int]]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        what = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "not TOML"
        raise InputError(file, int(found.group(1)) if found else 0, "syntax", f"not TOML: {what}") from None
    return data, _toml_lines(text)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")


def _toml_parts(dotted: str) -> list[str]:
    return [p.strip().strip("\"'") for p in re.findall(r"""("[^"]*"|'[^']*'|[^.]+)""", dotted)]


def _toml_lines(text: str) -> dict[Path_, int]:
    """The line of each table and key of a TOML text, by path (arrays of tables counted from 0). A scan, not a
    parser: it follows table headers and `key =` lines, which is where a plan's keys are; a key inside an inline
    table or a multi-line value falls back to its parent's line (`_Reader.line_of`)."""
    lines: dict[Path_, int] = {}
    counts: dict[Path_, int] = {}  # an array of tables -> its last index
    table: Path_ = ()
    in_string = False
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.count('"""') % 2 or raw.count("'''") % 2:  # a multi-line string opens or closes here
            was, in_string = in_string, not in_string
            if was:
                continue
        elif in_string:
            continue
        header = _HEADER.match(raw)
        if header and not _KEY.match(raw):
            parts = _toml_parts(header.group(2))
            resolved: list[str | int] = []
            for i, part in enumerate(parts):
                resolved.append(part)
                last = i == len(parts) - 1
                if last and header.group(1) == "[[":
                    counts[tuple(resolved)] = counts.get(tuple(resolved), -1) + 1
                if tuple(resolved) in counts:
                    resolved.append(counts[tuple(resolved)])
            table = tuple(resolved)
            lines.setdefault(table, n)
            continue
        key = _KEY.match(raw)
        if key:
            path = (*table, *_toml_parts(key.group(1)))
            lines.setdefault(path, n)
    return lines


def _load_yaml(text: str, file: str) -> tuple[Any, dict[Path_, int]]:
    import yaml

    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            lines: dict[Path_, int] = {}
            if node is not None:
                _yaml_lines(node, (), lines, set(), file)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(str(exc.problem or exc).split())
        raise InputError(file, mark.line + 1 if mark else 0, "syntax", f"not YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise InputError(file, 0, "syntax", f"not YAML: {' '.join(str(exc).split())[:200]}") from None
    return data, lines


def _yaml_lines(node: Any, path: Path_, lines: dict[Path_, int], seen: set[int], file: str) -> None:
    """Each node's line by path. An alias (a node met twice) is refused: a plan has no use for one, and a few
    nested aliases stand for billions of nodes."""
    import yaml

    if id(node) in seen:
        line = lines.get(path, node.start_mark.line + 1)  # where the alias is used (its key), not its anchor
        raise InputError(file, line, _field(path) or "plan", "YAML aliases are not allowed")
    seen.add(id(node))
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else "?"
            lines.setdefault((*path, name), key.start_mark.line + 1)
            _yaml_lines(value, (*path, name), lines, seen, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _yaml_lines(child, (*path, i), lines, seen, file)


# --- the shape -------------------------------------------------------------------------------------------------


def _field(path: Path_) -> str:
    """`model[2].settings.max_new_tokens`: keys joined by dots, list indices counted from 1."""
    out = ""
    for part in path:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def did_you_mean(word: str, known: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class _Reader:
    def __init__(self, file: str, lines: dict[Path_, int]):
        self.file, self.lines = file, lines

    def line_of(self, path: Path_) -> int:
        """The line of `path`, else of the nearest place above it that has one (0: the file as a whole)."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return 0

    def fail(self, path: Path_, what: str) -> InputError:
        return InputError(self.file, self.line_of(path), _field(path) or "plan", what)

    def table(self, value: Any, path: Path_, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a table of {what}, not {_kind(value)}")
        for key in value:
            if not isinstance(key, str):
                raise self.fail(path, f"a key must be a text, not {_kind(key)}")
        return value

    def known_keys(self, value: dict[str, Any], path: Path_, known: tuple[str, ...]) -> None:
        for key in value:
            if key not in known:
                raise self.fail((*path, key), f"not a key here ({', '.join(known)}){did_you_mean(key, known)}")

    def text(self, value: Any, path: Path_) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(path, f"must be a non-empty text, not {_kind(value)}")
        if len(value) > MAX_TEXT:
            raise self.fail(path, f"over {MAX_TEXT:,} characters")
        return value.strip()

    def plan(self, data: Any) -> Plan:
        if data is None:
            raise InputError(self.file, 0, "plan", "the plan is empty: it needs models and benchmarks")
        top = self.table(data, (), "settings, models and benchmarks")
        self.known_keys(top, (), _TOP)
        for one, many in (("model", "models"), ("benchmark", "benchmarks")):
            if one in top and many in top:
                raise self.fail((many,), f"give {one} or {many}, not both")
        m_key = "models" if "models" in top else "model"
        b_key = "benchmarks" if "benchmarks" in top else "benchmark"
        settings = self.settings(top.get("settings", {}), ("settings",))
        models = tuple(self.model(v, (m_key, i)) for i, v in enumerate(self.entries(top, m_key)))
        benches = tuple(self.benchmark(v, (b_key, i)) for i, v in enumerate(self.entries(top, b_key)))
        self.unique([m.label for m in models], [(m_key, i) for i in range(len(models))], "a model's name")
        self.unique([b.name for b in benches], [(b_key, i) for i in range(len(benches))], "a benchmark")
        if len(models) * len(benches) > MAX_RUNS:
            raise InputError(
                self.file,
                0,
                "plan",
                f"{len(models)} models × {len(benches)} benchmarks are {len(models) * len(benches):,} runs, "
                f"over the {MAX_RUNS} a plan may hold",
            )
        return Plan(self.file, settings, models, benches)

    def entries(self, top: dict[str, Any], key: str) -> list[Any]:
        value = top.get(key)
        if value is None:
            raise InputError(self.file, 0, key, f"the plan names no {key}: add [[{key}]] tables or {key} = [...]")
        if isinstance(value, dict):  # YAML's or TOML's single table: one entry
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail((key,), f"must be a non-empty list, not {_kind(value)}")
        if len(value) > MAX_RUNS:
            raise self.fail((key,), f"{len(value):,} entries, over the {MAX_RUNS} a plan may hold")
        return value

    def unique(self, names: list[str], paths: list[Path_], what: str) -> None:
        seen: set[str] = set()
        for name, path in zip(names, paths, strict=True):
            if name in seen:
                raise self.fail(path, f"{what} {name[:80]!r} is named twice (each row and column is named once)")
            seen.add(name)

    def model(self, value: Any, path: Path_) -> PlanModel:
        if isinstance(value, str):
            spec = self.text(value, path)
            line = self.line_of(path)
            return PlanModel(spec, spec, (), _field(path), line, _field(path), line)
        entry = self.table(value, path, "spec, name and settings")
        self.known_keys(entry, path, _MODEL_KEYS)
        if "spec" not in entry:
            raise self.fail(path, "a model needs spec (a model spec or a saved model's name)")
        spec = self.text(entry["spec"], (*path, "spec"))
        label = self.text(entry["name"], (*path, "name")) if "name" in entry else spec
        settings = self.settings(entry.get("settings", {}), (*path, "settings"))
        return PlanModel(
            spec,
            label,
            settings,
            _field(path),
            self.line_of(path),
            _field((*path, "spec")),
            self.line_of((*path, "spec")),
        )

    def benchmark(self, value: Any, path: Path_) -> PlanBenchmark:
        if isinstance(value, str):
            name = self.text(value, path)
            line = self.line_of(path)
            return PlanBenchmark(name, (), _field(path), line, _field(path), line)
        entry = self.table(value, path, "name and settings")
        self.known_keys(entry, path, _BENCH_KEYS)
        if "name" not in entry:
            raise self.fail(path, "a benchmark needs name (vlmdesk benchmarks)")
        name = self.text(entry["name"], (*path, "name"))
        settings = self.settings(entry.get("settings", {}), (*path, "settings"))
        return PlanBenchmark(
            name,
            settings,
            _field(path),
            self.line_of(path),
            _field((*path, "name")),
            self.line_of((*path, "name")),
        )

    def settings(self, value: Any, path: Path_) -> tuple[Setting, ...]:
        table = self.table(value, path, "`vlmdesk run` options")
        found: dict[str, Setting] = {}
        for key, v in table.items():
            here = (*path, key)
            name = key.strip().lstrip("-").replace("-", "_")
            if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                raise self.fail(here, "not a vlmdesk run option (options are written like max_new_tokens)")
            if name in found:
                raise self.fail(here, f"given twice in one table (also as {found[name].written})")
            found[name] = Setting(name, self.value(v, here), _field(here), self.line_of(here))
        return tuple(found.values())

    def value(self, v: Any, path: Path_) -> Any:
        if isinstance(v, list):
            if not v:
                raise self.fail(path, "an empty list: leave the option out instead")
            return [self.scalar(x, (*path, i), in_list=True) for i, x in enumerate(v)]
        return self.scalar(v, path, in_list=False)

    def scalar(self, v: Any, path: Path_, *, in_list: bool) -> Any:
        if isinstance(v, bool) and not in_list:
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.fail(path, f"{v} is not a finite number")
            return v
        if isinstance(v, str):
            if len(v) > MAX_TEXT:
                raise self.fail(path, f"over {MAX_TEXT:,} characters")
            return v
        what = "a number or a text" if in_list else "true/false, a number, a text or a list of them"
        raise self.fail(path, f"must be {what}, not {_kind(v)}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "a text",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)
