"""A key can never reach the workspace: specs that seem to hold one are refused on every path, without echoing it."""
import sqlite3

import pytest

from evaluator.backends import BackendError, load_backend
from evaluator.backends.secrets import check_no_secret
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

KEYED = [
    "openai:m@https://sk-SECRETuserinfokey123456@127.0.0.1:9/v1",
    "openai:sk-SECRETmodelnamekey123456@https://127.0.0.1:9/v1",
    "openai:m@https://gsk_SECRETtokentokentoken12@127.0.0.1:9/v1",
    "openai:m@https://user:SECRETPASSWORD@127.0.0.1:9/v1",
    "openai:m@https://127.0.0.1:9/v1#SECRETFRAG",
    "openai:m@https://127.0.0.1:9/v1?key_env=sk_live_SECRETSECRETSECRET1",
    "openai:m@https://127.0.0.1:9/v1?key_env=my_secret_value",
    "openai:m@https://127.0.0.1:9/v1?api_key=SECRETVALUE",
    "hf:org/model?token=SECRETVALUE",
]


@pytest.mark.parametrize("spec", KEYED)
def test_specs_holding_a_key_are_refused_without_echoing_it(spec):
    with pytest.raises(BackendError) as err:
        load_backend(spec)
    assert "SECRET" not in str(err.value)


@pytest.mark.parametrize("spec", ["openai:gpt-4o-mini@https://api.example.test/v1?key_env=OPENAI_API_KEY",
                                  "hf:llava-hf/llava-1.5-7b-hf", "hf:/models/checkpoint-12000?dtype=bfloat16",
                                  "openai:Qwen/Qwen2-VL-7B@http://localhost:8000/v1?concurrency=64"])
def test_ordinary_specs_pass(spec):
    check_no_secret(spec)


@pytest.mark.parametrize("args", [
    ["run", "--bench", "demo", "--model", KEYED[0]],
    ["run", "--bench", "demo", "--model", "baseline:first", "--extractor", f"rules+llm:{KEYED[1]}"],
    ["qc", "text-only", "--bench", "demo", "--model", KEYED[2]],
    ["models", "add", "mine", KEYED[5]],
])
def test_no_command_stores_or_prints_a_key(tmp_path, capsys, args):
    from db import open_workspace

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    capsys.readouterr()
    assert main(["--workspace", str(path), *args]) == 2
    out, err = capsys.readouterr()
    assert "SECRET" not in out + err and err.startswith("error: ")
    dump = "\n".join(sqlite3.connect(path).iterdump())
    assert "SECRET" not in dump
