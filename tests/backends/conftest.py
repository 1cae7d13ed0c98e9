"""Session-wide tiny models on disk, built once and shared by every backend test."""
import pytest

from tests.tiny_models import build_tiny_idefics3, build_tiny_llava, build_tiny_text_lm


@pytest.fixture(scope="session")
def tiny_llava_dir(tmp_path_factory):
    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava"))


@pytest.fixture(scope="session")
def tiny_idefics3_dir(tmp_path_factory):
    return build_tiny_idefics3(tmp_path_factory.mktemp("tiny_idefics3"))


@pytest.fixture(scope="session")
def tiny_text_lm_dir(tmp_path_factory):
    return build_tiny_text_lm(tmp_path_factory.mktemp("tiny_text_lm"))
