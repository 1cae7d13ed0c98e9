"""Keys never enter vlmdesk: a model spec names the environment variable that holds one, and a spec that seems
to hold a key itself is refused before it can be stored in a run, a saved model, a log line or an error message.
Messages never repeat the suspicious value. What a server says back (an error body that echoes the key) goes
through `redact` at the door every backend is loaded behind (door.py) before anything stores or prints it."""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlsplit

from evaluator.backends.base import BackendError

# Options that carry a credential, and the shapes of common providers' keys (OpenAI/Anthropic sk-, Groq gsk_,
# Hugging Face hf_, xAI xai-, Google AIza…).
_SECRET_OPTIONS = {"api_key", "apikey", "key", "token", "access_token", "password", "secret", "auth"}
_KEY_SHAPES = re.compile(r"(?<![A-Za-z0-9])(?:sk[-_]|gsk_|hf_|xai-|AIza)[A-Za-z0-9_-]{16,}")
_AUTH_HEADER = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_URL = re.compile(r"https?://\S+", re.IGNORECASE)
_KEY_ENV_OPTION = re.compile(r"[?&]key_env=([A-Za-z_][A-Za-z0-9_]{0,63})")
# Variables read for a key when a spec names none (openai: OPENAI_API_KEY; the Hugging Face hub's tokens).
DEFAULT_KEY_VARS = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
REDACTED = "[redacted]"
_MIN_SECRET = 4  # shorter values (e.g. the dummy "EMPTY"…) would blank ordinary words; they are no real key

ADVICE = (
    "name the environment variable that holds the key instead (openai:MODEL@URL?key_env=MY_KEY_VAR); "
    "keys are never stored"
)


def check_no_secret(spec: str) -> None:
    """BackendError when a model spec seems to hold a key rather than name the variable that holds it."""
    text = spec or ""
    if _KEY_SHAPES.search(text):
        raise BackendError(f"the model spec seems to contain an API key; {ADVICE}")
    _, _, query = text.rpartition("?")
    options = dict(parse_qsl(query, keep_blank_values=True)) if "?" in text else {}
    leaked = sorted(k for k in options if k.lower() in _SECRET_OPTIONS)
    if leaked:
        raise BackendError(f"the model spec has a credential option ({', '.join(leaked)}); {ADVICE}")
    if "key_env" in options and not _ENV_NAME.match(options["key_env"]):
        raise BackendError(
            "key_env must be the NAME of an environment variable (upper-case letters, digits, _), not the key itself"
        )
    for url in _URL.findall(text):
        parts = urlsplit(url.split("?", 1)[0])
        if parts.username or parts.password:
            raise BackendError(f"the base URL carries credentials before '@'; {ADVICE}")
        if parts.fragment:
            raise BackendError("the base URL has a #fragment; remove it (keys belong in an environment variable)")


def key_values(*specs: str | None) -> tuple[str, ...]:
    """The keys these specs (model or extractor specs) would read: the values of the variables their `key_env`
    names, and of the default key variables."""
    names = set(DEFAULT_KEY_VARS)
    for spec in specs:
        names.update(_KEY_ENV_OPTION.findall(spec or ""))
    values = {os.environ.get(name) or "" for name in names}
    return tuple(sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True))


def redact(text: str, *specs: str | None, secrets: tuple[str, ...] = ()) -> str:
    """`text` with every key it may hold replaced by [redacted]: the values of the key variables the specs name
    (and the default ones), `secrets`, and anything key-shaped (sk-…, hf_…, Bearer tokens). The one redaction
    every stored or printed message goes through."""
    for value in sorted(
        {*key_values(*specs), *(s for s in secrets if s and len(s) >= _MIN_SECRET)}, key=len, reverse=True
    ):
        text = text.replace(value, REDACTED)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _KEY_SHAPES.sub(REDACTED, text)
