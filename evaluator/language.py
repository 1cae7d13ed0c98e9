"""Language of an item: MMBench has English and Chinese versions, and prompts differ between them."""
import re

# CJK Unified Ideographs (+ extension A) and CJK punctuation.
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff01-\uff5e]")


def language_of(text: str) -> str:
    """'zh' when the text contains CJK ideographs or full-width punctuation, else 'en'."""
    return "zh" if _CJK.search(text or "") else "en"
