"""Language of an item: MMBench has English and Chinese versions, and prompts differ between them."""
import re

# CJK Unified Ideographs (+ extensions and compatibility ideographs). Full-width Latin ("Ｂ") is not Chinese.
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")


def language_of(text: str) -> str:
    """'zh' when the text contains CJK ideographs, else 'en'."""
    return "zh" if _CJK.search(text or "") else "en"
