"""How lists, legends and ticks shorten a model spec when it does not fit: the part that tells runs apart (the
model's name, a baseline's seed) is kept, what seldom does (a server's address, an organisation, a key variable) goes
first, and what is still too long is elided in the middle — never from the left, which left "…:8000/v1?key_env=K"
of a server model. The app's runs lists and the charts share it; a tooltip or the CLI gives the whole spec.

Pure string work (no Qt, no matplotlib): the runs list imports it at start."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode

ELLIPSIS = "…"
# Options that change nothing a model answers: how a server is reached or how hard it is pushed, where a local
# model runs and in what batches.
_REACH = {"key_env", "concurrency", "timeout", "retries", "backoff", "batch_size", "device", "overlap"}
_NAMED = {"hf", "openai"}  # kinds whose model part is a model's own name (a baseline's is "random")
_URL = re.compile(r"@(?=https?://)")


def _server(url: str) -> str:
    """A base URL as its host and port ("gpu-box:8000"): the scheme and the /v1 path tell nothing apart."""
    return url.split("://", 1)[-1].split("/", 1)[0]


def model_variants(spec: str) -> list[str]:
    """Shorter and shorter forms of a model spec (or an imported run's model name), the whole spec first, each one
    still naming the model: the options of reach dropped, then the server, then the organisation of a hub id or
    the folders of a local path, last the kind of a named model ("Qwen2-VL-7B"). Distinct, longest first."""
    kind, colon, rest = spec.partition(":")
    if not colon or " " in kind or "/" in kind:  # an imported run's name ("llava-v1.5-7b"), a path, no kind
        return [spec]
    head, _, query = rest.partition("?")
    options = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in _REACH]
    kept = f"?{urlencode(options)}" if options else ""
    match = _URL.search(head) if kind == "openai" else None
    model, urls = (head[: match.start()], head[match.end() :].split(",")) if match else (head, [])
    where = ""
    if urls:
        where = "@" + _server(urls[0]) + (f"+{len(urls) - 1}" if len(urls) > 1 else "")
    name = model.rstrip("/").rsplit("/", 1)[-1] or model
    forms = [
        spec,
        f"{kind}:{model}{where}{kept}",
        f"{kind}:{model}{kept}",
        f"{kind}:{name}{kept}",
    ]
    if kind in _NAMED:  # a checkpoint's or a served model's name says what it is without its kind
        forms.append(f"{name}{kept}")
    return list(dict.fromkeys(forms))


def elide_middle(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, its middle replaced by "…" (its start and end tell most apart)."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = limit // 2
    tail = limit - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def fit_model(spec: str, fits: Callable[[str], bool], *, elide: Callable[[str], str] | None = None) -> str:
    """The longest form of `spec` (model_variants) that `fits`; none does: the shortest, elided in the middle by
    `elide` (a width-aware elision, a widget's font metrics) or to what `fits` accepts, a character at a time."""
    forms = model_variants(spec)
    for form in forms:
        if fits(form):
            return form
    last = forms[-1]
    if elide is not None:
        return elide(last)
    for limit in range(len(last) - 1, 0, -1):
        if fits(shorter := elide_middle(last, limit)):
            return shorter
    return elide_middle(last, 1)


def short_model(spec: str, limit: int = 36) -> str:
    """A model spec in at most `limit` characters (legends, ticks): see fit_model."""
    return fit_model(spec, lambda form: len(form) <= limit)
