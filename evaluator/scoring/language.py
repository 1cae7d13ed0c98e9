"""Language of an item: MMBench has English and Chinese versions, and prompts differ between them."""

from evaluator.scoring.choices import has_cjk


def language_of(text: str) -> str:
    """'zh' when the text contains CJK ideographs, else 'en'."""
    return "zh" if has_cjk(text) else "en"
