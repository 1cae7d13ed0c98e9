"""Model backends behind one protocol (base.Backend): `hf:`, `openai:`, `baseline:`."""
from __future__ import annotations

from urllib.parse import parse_qsl

from evaluator.backends.base import Backend, BackendError, Query, ScoringBackend

SPEC_HELP = ("hf:<local path or hub id>[?dtype=bfloat16&device=cuda&batch_size=8&trust_remote_code=1], "
             "openai:<model>@<base url>[?key_env=OPENAI_API_KEY&concurrency=8&timeout=60], "
             "baseline:random|first|frequent[?seed=N]")


def load_backend(spec: str, *, seed: int = 0, frequent_answer: str | None = None,
                 batch_size: int | None = None) -> Backend:
    """Build the backend a model spec names. `frequent_answer` feeds `baseline:frequent`; `batch_size` is the
    run's, which a local model uses unless its spec sets its own."""
    from evaluator.backends.secrets import check_no_secret

    check_no_secret(spec)  # before the spec can reach a run row, a log line or an error message
    scheme, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise BackendError(f"bad model spec {spec!r}; expected one of {SPEC_HELP}")
    if scheme == "hf":
        from evaluator.backends.hf import parse_hf_spec

        return parse_hf_spec(rest, default_batch_size=batch_size)
    if scheme == "openai":
        from evaluator.backends.openai_backend import parse_openai_spec

        return parse_openai_spec(rest)
    if scheme == "baseline":
        from evaluator.backends.baseline import BaselineBackend

        kind, _, query = rest.partition("?")
        opts = dict(parse_qsl(query))
        unknown = set(opts) - {"seed", "delay_ms"}
        if unknown:
            raise BackendError(f"baseline: unknown option(s) {', '.join(sorted(unknown))} (seed, delay_ms)")
        try:
            spec_seed = int(opts["seed"][:12]) if "seed" in opts and len(opts["seed"]) <= 12 else seed
            delay_ms = float(opts.get("delay_ms", "0")[:40])
        except ValueError as exc:
            raise BackendError(f"baseline: bad option value ({exc})") from None
        if not 0 <= spec_seed <= 2**32 - 1 or ("seed" in opts and len(opts["seed"]) > 12):
            raise BackendError(f"baseline: seed must be a whole number in 0..{2**32 - 1}")
        if not 0 <= delay_ms <= 60_000:  # also refuses nan and inf
            raise BackendError("baseline: delay_ms must be a number in 0..60000")
        return BaselineBackend(kind, seed=spec_seed, frequent=frequent_answer, delay_ms=delay_ms)
    raise BackendError(f"unknown model spec scheme {scheme!r}; expected one of {SPEC_HELP}")


def can_score(backend: Backend) -> bool:
    return callable(getattr(backend, "score", None))


__all__ = ["Backend", "BackendError", "Query", "ScoringBackend", "SPEC_HELP", "can_score", "load_backend"]
