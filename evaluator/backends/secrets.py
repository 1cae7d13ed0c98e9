"""Keys never enter vlmdesk: a model spec names the environment variable that holds one, and a spec that seems
to hold a key itself is refused before it can be stored in a run, a saved model, a log line or an error message.
Messages never repeat the suspicious value."""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from evaluator.backends.base import BackendError

# Options that carry a credential, and the shapes of common providers' keys (OpenAI/Anthropic sk-, Groq gsk_,
# Hugging Face hf_, xAI xai-, Google AIza…).
_SECRET_OPTIONS = {"api_key", "apikey", "key", "token", "access_token", "password", "secret", "auth"}
_KEY_SHAPES = re.compile(r"(?<![A-Za-z0-9])(?:sk[-_]|gsk_|hf_|xai-|AIza)[A-Za-z0-9_-]{16,}")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_URL = re.compile(r"https?://\S+", re.IGNORECASE)

ADVICE = ("name the environment variable that holds the key instead (openai:MODEL@URL?key_env=MY_KEY_VAR); "
          "keys are never stored")


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
        raise BackendError("key_env must be the NAME of an environment variable (upper-case letters, digits, _), "
                           "not the key itself")
    for url in _URL.findall(text):
        parts = urlsplit(url.split("?", 1)[0])
        if parts.username or parts.password:
            raise BackendError(f"the base URL carries credentials before '@'; {ADVICE}")
        if parts.fragment:
            raise BackendError("the base URL has a #fragment; remove it (keys belong in an environment variable)")
