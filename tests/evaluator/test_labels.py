"""How a model spec is shortened for lists and legends (evaluator/analysis/labels.py): the model's name is kept, the
server's address and the options of reach go first, and what is left is elided in the middle, never from the left."""

from evaluator.analysis.labels import elide_middle, model_variants, short_model

SERVER = "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ@http://127.0.0.1:42745/v1?key_env=VLLM_KEY"


def test_a_server_spec_loses_its_address_before_its_model():
    assert model_variants(SERVER) == [
        SERVER,
        "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ@127.0.0.1:42745",
        "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ",
        "openai:Qwen2.5-VL-72B-Instruct-AWQ",
        "Qwen2.5-VL-72B-Instruct-AWQ",
    ]
    assert short_model(SERVER, 40) == "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ"
    assert short_model(SERVER, 36) == "openai:Qwen2.5-VL-72B-Instruct-AWQ"
    short = short_model(SERVER, 20)
    assert len(short) == 20 and short.startswith("Qwen2.5") and short.endswith("AWQ") and "…" in short


def test_what_tells_runs_apart_stays():
    # A baseline's seed is what tells two runs apart: kept, the middle elided if need be.
    assert model_variants("baseline:random?seed=3") == ["baseline:random?seed=3"]
    assert short_model("baseline:random?seed=3", 15).endswith("?seed=3")
    # Options that change nothing a model answers go; those that do (dtype) stay.
    assert model_variants("hf:/data/models/llava-1.5-7b-hf?dtype=bfloat16&batch_size=4")[1:] == [
        "hf:/data/models/llava-1.5-7b-hf?dtype=bfloat16",
        "hf:llava-1.5-7b-hf?dtype=bfloat16",
        "llava-1.5-7b-hf?dtype=bfloat16",
    ]
    replicas = "openai:m@http://a:8000/v1,http://b:8000/v1?concurrency=8&temperature=0.5"
    assert model_variants(replicas)[1] == "openai:m@a:8000+1?temperature=0.5"
    assert model_variants("llava-v1.5-7b") == ["llava-v1.5-7b"]  # an imported run's name


def test_elide_middle():
    assert elide_middle("abcdefghij", 10) == "abcdefghij"
    assert elide_middle("abcdefghij", 5) == "ab…ij"
    assert elide_middle("abcdefghij", 2) == "a…" and elide_middle("abcdefghij", 1) == "…"
