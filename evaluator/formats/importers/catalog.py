"""The catalog: benchmarks vlmdesk can fetch by name (`vlmdesk fetch NAME`, `vlmdesk import NAME`), as facts.

Each entry names where the file is published, how it is checked and how it is imported. Two layouts:

- ``vlmevalkit`` — one TSV (base64 images) at the URL VLMEvalKit downloads it from, checked against the MD5 that
  VLMEvalKit publishes beside it. Names, URLs and MD5s are VLMEvalKit's own, copied from
  ``vlmeval/dataset/image_mcq.py`` (``ImageMCQDataset.DATASET_URL`` / ``DATASET_MD5``) and
  ``vlmeval/dataset/image_yorn.py`` (``ImageYORNDataset``, POPE), ``vlmeval/dataset/image_vqa.py``
  (``ImageVQADataset``: TextVQA, DocVQA, InfoVQA, ChartQA, OCRVQA; open questions, format vqa-tsv) and
  ``vlmeval/dataset/image_caption.py`` (``ImageCaptionDataset``: COCO_VAL) at open-compass/VLMEvalKit commit
  e8e78f05f3080fe28154f2130321f17951c3be94 (2026-08-18). VLMEvalKit publishes no sizes: ``size`` is None ("?").
  The OpenVLM leaderboard's default set at the same commit: ``MMMUDataset`` (image_mcq.py: MMMU_DEV_VAL, several
  images an item), ``ImageMCQDataset`` (RealWorldQA; MMStar, AI2D_TEST and MMBench v1.1 were here already),
  ``OCRBench``, ``MathVista`` and ``MMVet`` (image_vqa.py: open answers, format vqa-tsv) and ``ImageYORNDataset``
  (image_yorn.py: HallusionBench; its ``category`` is VD/VS, not a POPE setting, so it is imported as open questions
  whose one reference is Yes or No, and its official figures read the answers: evaluator/analysis/official.py).
- ``lmms-lab`` — parquet shards of one split on the Hugging Face hub, as lmms-eval loads them (its task name is
  the entry's name; repo, config and split from lmms-eval's task YAML: ``lmms_eval/tasks/mmbench/*.yaml``,
  ``lmms_eval/tasks/pope/pope_{adv,pop,random}.yaml``). The shard names, sizes and SHA-256s are not written here:
  they are read from the hub's tree API at fetch time (``/api/datasets/REPO/tree/REVISION/CONFIG``, every LFS
  file's ``lfs.oid`` is its SHA-256), so each shard is verified against the checksum the hub reports for it.
  Only the layouts vlmdesk's parquet importer reads are listed: lmms-lab's MMBench and POPE, and its VQA and
  caption sets (``lmms_eval/tasks/{textvqa,docvqa,infovqa,vqav2,ok_vqa,chartqa,coco_cap}``; format vqa-parquet),
  whose rows keep the ids lmms-eval's samples name, so `import-predictions` matches its --log_samples to them.
  Their folders and split names were read off the hub's file listings (textvqa, DocVQA, OK-VQA, ChartQA,
  COCO-Caption2017); VQAv2's ``data/validation`` and DocVQA's ``InfographicVQA`` folder follow the same pattern
  unseen.

POPE's three COCO settings: VLMEvalKit's POPE.tsv holds every question once, its ``category`` listing the settings
it belongs to ("adversarial,popular,random"); importing it by name makes one benchmark per setting (POPE_random,
POPE_popular, POPE_adversarial), since POPE's figures are per setting (the importer's rule: one setting per
benchmark). lmms-lab's POPE has a split per setting: one entry each (pope_random, pope_pop, pope_adv).

Teams add their own entries (a private benchmark, a pinned copy) with ``VLMDESK_CATALOG``: a JSON file holding a
list of entries with the fields of ``CatalogEntry`` (``name``, ``layout``, ``url`` or ``repo``, ``checksum``…),
validated when read; an entry there replaces a built-in of the same name.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from db.errors import InvalidInput, NotFound
from evaluator.formats.importers.common import Refused, json_loads, open_regular

CATALOG_ENV = "VLMDESK_CATALOG"
VLMEVALKIT_COMMIT = "e8e78f05f3080fe28154f2130321f17951c3be94"
POPE_SETTINGS = ("random", "popular", "adversarial")
MAX_CATALOG_BYTES = 1 << 20
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_CHECKSUM = re.compile(r"^(md5:[0-9a-f]{32}|sha256:[0-9a-f]{64})$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_PATH_PART = re.compile(r"^[A-Za-z0-9._-]+$")
# The extensions a cached file keeps (the importer detects formats by them); anything else is cached as NAME.tsv.
_SUFFIXES = (".tsv", ".jsonl", ".json", ".parquet")

Layout = Literal["vlmevalkit", "lmms-lab"]


@dataclass(frozen=True)
class CatalogEntry:
    """One benchmark by name. ``url`` (vlmevalkit) or ``repo``/``config``/``split`` (lmms-lab) say where it is;
    ``checksum`` is ``md5:HEX`` or ``sha256:HEX`` (vlmevalkit), None for lmms-lab (the hub's SHA-256 per shard);
    ``format`` and ``settings`` say how it is imported (``settings``: one benchmark per POPE setting)."""

    name: str
    layout: Layout
    title: str
    format: str
    licence: str
    url: str | None = None
    checksum: str | None = None
    size: int | None = None
    repo: str | None = None
    revision: str = "main"
    config: str | None = None
    split: str | None = None
    setting: str | None = None  # the POPE setting of a one-setting entry
    settings: tuple[str, ...] = ()  # a file holding several settings: one benchmark each
    same_as: str | None = None  # the VLMEvalKit name of the same benchmark in another layout
    aliases: tuple[str, ...] = field(default=())
    groups: tuple[str, ...] = ()  # LVLM-eHub's capability groups (evaluator/analysis/groups.py), stored on import

    @property
    def kind(self) -> str:
        """The kind of benchmark an import makes (mcq, yesno, open): its format's."""
        from evaluator.formats import registry as formats

        entry = formats.get(self.format)
        return entry.kind if entry is not None else "?"

    @property
    def file_name(self) -> str:
        """The name the file has in the cache: NAME and the URL's extension (NAME.tsv, as VLMEvalKit names its copy
        in ~/LMUData, so one can be put there by hand); lmms-lab: the folder NAME of its shards."""
        if self.layout == "vlmevalkit":
            assert self.url is not None
            last = _url_file_name(self.url) or ""
            suffix = last[last.rfind(".") :] if "." in last else ""
            return f"{self.name}{suffix.lower() if suffix.lower() in _SUFFIXES else '.tsv'}"
        return self.name

    def benchmark_names(self, name: str | None = None) -> dict[str | None, str]:
        """The benchmarks an import makes: setting (None: no setting to select) -> benchmark name."""
        base = name or self.name
        if self.settings:
            return {s: f"{base}_{s}" for s in self.settings}
        return {self.setting: base}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layout": self.layout,
            "title": self.title,
            "format": self.format,
            "kind": self.kind,
            "size": self.size,
            "checksum": self.checksum if self.checksum else ("sha256 per shard, from the hub" if self.repo else None),
            "url": self.url,
            "repo": self.repo,
            "revision": self.revision if self.repo else None,
            "config": self.config,
            "split": self.split,
            "setting": self.setting,
            "settings": list(self.settings),
            "same_as": self.same_as,
            "aliases": list(self.aliases),
            "groups": list(self.groups),
            "licence": self.licence,
        }


def _url_file_name(url: str) -> str | None:
    last = url.rsplit("/", 1)[-1].split("?", 1)[0]
    return last if _PATH_PART.match(last) else None


_OC = "https://opencompass.openxlab.space/utils"
_MMBENCH_TERMS = "MMBench's terms (github.com/open-compass/MMBench); images from its source datasets"
_UNVERIFIED = " (not checked offline: read the source's terms before use)"
_TEXTVQA_TERMS = "TextVQA's terms (textvqa.org); images from Open Images (CC BY 2.0)" + _UNVERIFIED
_DOCVQA_TERMS = "DocVQA's terms (docvqa.org); images from the UCSF Industry Documents Library" + _UNVERIFIED
_OCRVQA_TERMS = "OCR-VQA's terms (ocr-vqa.github.io); book covers from Amazon" + _UNVERIFIED
_COCO_TERMS = "COCO captions: CC BY 4.0 (cocodataset.org); images under their Flickr licences"
_POPE_TERMS = "POPE's terms (github.com/RUCAIBox/POPE); images from COCO val2014 (cocodataset.org, Flickr licences)"


def _vlmevalkit(name: str, url: str, md5: str, title: str, licence: str, **kw: Any) -> CatalogEntry:
    return CatalogEntry(name, "vlmevalkit", title, kw.pop("format", "mmbench-tsv"), licence, url, f"md5:{md5}", **kw)


def _lmms(name: str, repo: str, config: str, split: str, title: str, fmt: str, licence: str, **kw: Any) -> CatalogEntry:
    return CatalogEntry(name, "lmms-lab", title, fmt, licence, repo=repo, config=config, split=split, **kw)


# Capability groups: only where LVLM-eHub (OpenGVLab/Multi-Modality-Arena) files the same benchmark itself — ScienceQA
# IMG under visual reasoning (knowledge-grounded image description), COCO POPE under object hallucination, and its VQA
# datasets under visual reasoning (the LVLM-eHub paper, Xu et al. 2023, files visual question answering — DocVQA,
# TextVQA, STVQA, OCR-VQA, OKVQA, GQA… — under visual reasoning; DocVQA, OCRVQA, OKVQA and TextVQA are in its
# LVLM_evaluation/README.md dataset tree at commit bd2999a): TextVQA, DocVQA, OCR-VQA and OK-VQA in either layout.
# MMBench, CCBench, SEED-Bench, AI2D, MMStar, MMMU, MathVista, OCRBench, HallusionBench, MMVet, RealWorldQA, InfoVQA,
# ChartQA and COCO captions are not among its benchmarks (its captioning sets are NoCaps, Flickr30K and WHOOPS): left
# untagged.
_VQA_GROUP = ("reasoning",)
BUILTIN: tuple[CatalogEntry, ...] = (
    # MMBench v1.0 (image_mcq.py, "MMBench v1.0")
    _vlmevalkit("MMBench_DEV_EN", f"{_OC}/benchmarks/MMBench/MMBench_DEV_EN.tsv", "b6caf1133a01c6bb705cf753bb527ed8",
                "MMBench v1.0 dev, English", _MMBENCH_TERMS),
    _vlmevalkit("MMBench_TEST_EN", f"{_OC}/benchmarks/MMBench/MMBench_TEST_EN.tsv", "6939fadb0ce626fefc0bdc9c64efc528",
                "MMBench v1.0 test, English (no answers)", _MMBENCH_TERMS),
    _vlmevalkit("MMBench_DEV_CN", f"{_OC}/benchmarks/MMBench/MMBench_DEV_CN.tsv", "08b8fc3324a5ed74155350f57be69fbd",
                "MMBench v1.0 dev, Chinese", _MMBENCH_TERMS),
    _vlmevalkit("MMBench_TEST_CN", f"{_OC}/benchmarks/MMBench/MMBench_TEST_CN.tsv", "7e1239baf0ee4c8b513e19705a0f317e",
                "MMBench v1.0 test, Chinese (no answers)", _MMBENCH_TERMS),
    # MMBench v1.1
    _vlmevalkit("MMBench_DEV_EN_V11", f"{_OC}/benchmarks/MMBench/MMBench_DEV_EN_V11.tsv",
                "30c05be8f2f347a50be25aa067248184", "MMBench v1.1 dev, English", _MMBENCH_TERMS),
    _vlmevalkit("MMBench_TEST_EN_V11", f"{_OC}/benchmarks/MMBench/MMBench_TEST_EN_V11.tsv",
                "8d1a704e791df6f5d9fb3ef782b65365", "MMBench v1.1 test, English (no answers)", _MMBENCH_TERMS),
    _vlmevalkit("MMBench_DEV_CN_V11", f"{_OC}/benchmarks/MMBench/MMBench_DEV_CN_V11.tsv",
                "593f9b5f6bea453d870a798b34ae4f37", "MMBench v1.1 dev, Chinese", _MMBENCH_TERMS),
    _vlmevalkit("MMBench_TEST_CN_V11", f"{_OC}/benchmarks/MMBench/MMBench_TEST_CN_V11.tsv",
                "156e6569f9547afb16603eca16e85373", "MMBench v1.1 test, Chinese (no answers)", _MMBENCH_TERMS),
    _vlmevalkit("CCBench", f"{_OC}/VLMEval/CCBench.tsv", "f5dde47f24dc5a6fb6e595b409b466ac",
                "MMBench's Chinese-culture set (CCBench)", _MMBENCH_TERMS),
    _vlmevalkit("SEEDBench_IMG", f"{_OC}/benchmarks/SEEDBench/SEEDBench_IMG.tsv", "68017231464752261a2526d6ca3a10c0",
                "SEED-Bench, image questions", "SEED-Bench's terms (github.com/AILab-CVC/SEED-Bench)" + _UNVERIFIED),
    _vlmevalkit("ScienceQA_TEST", f"{_OC}/benchmarks/ScienceQA/ScienceQA_TEST.tsv", "e42e9e00f9c59a80d8a5db35bc32b71f",
                "ScienceQA test, the questions with an image", "CC BY-NC-SA 4.0 (ScienceQA, scienceqa.github.io)",
                groups=("reasoning",)),
    _vlmevalkit("AI2D_TEST", f"{_OC}/VLMEval/AI2D_TEST.tsv", "0f593e0d1c7df9a3d69bf1f947e71975",
                "AI2D test (diagrams)", "AI2D's terms (allenai.org, AI2 Diagrams)" + _UNVERIFIED),
    _vlmevalkit("MMStar", f"{_OC}/VLMEval/MMStar.tsv", "e1ecd2140806c1b1bbf54b43372efb9e",
                "MMStar (vision-indispensable questions)", "MMStar's terms (MMStar-Benchmark/MMStar)" + _UNVERIFIED),
    _vlmevalkit("POPE", f"{_OC}/VLMEval/POPE.tsv", "c12f5acb142f2ef1f85a26ba2fbe41d5",
                "POPE on COCO val2014: random, popular, adversarial", _POPE_TERMS, format="pope-tsv",
                settings=POPE_SETTINGS, groups=("hallucination",)),
    # The OpenVLM leaderboard's default set (evaluator/analysis/official.py scores MMMU, OCRBench, HallusionBench)
    _vlmevalkit("MMMU_DEV_VAL", f"{_OC}/VLMEval/MMMU_DEV_VAL.tsv", "585e8ad75e73f75dcad265dfd0417d64",
                "MMMU dev and validation: college-level questions, several images an item (the leaderboard's "
                "MMMU_VAL is its validation split)", "MMMU's terms (mmmu-benchmark.github.io)" + _UNVERIFIED),
    _vlmevalkit("RealWorldQA", f"{_OC}/VLMEval/RealWorldQA.tsv", "4de008f55dc4fd008ca9e15321dc44b7",
                "RealWorldQA: real-world spatial questions (xAI)", "CC BY-ND 4.0 (xAI, RealWorldQA)" + _UNVERIFIED),
    _vlmevalkit("MathVista_MINI", f"{_OC}/VLMEval/MathVista_MINI.tsv", "f199b98e178e5a2a20e7048f5dcb0464",
                "MathVista testmini: mathematical reasoning in visual contexts (free-form and choice answers)",
                "CC BY-SA 4.0 (MathVista, mathvista.github.io)" + _UNVERIFIED, format="vqa-tsv"),
    _vlmevalkit("OCRBench", f"{_OC}/VLMEval/OCRBench.tsv", "e953d98a987cc6e26ef717b61260b778",
                "OCRBench: 1,000 OCR questions in ten categories, scored out of 1000",
                "OCRBench's terms (github.com/Yuliang-Liu/MultimodalOCR)" + _UNVERIFIED, format="vqa-tsv"),
    _vlmevalkit("HallusionBench", f"{_OC}/VLMEval/HallusionBench.tsv", "0c23ac0dc9ef46832d7a24504f2a0c7c",
                "HallusionBench: yes/no questions on original and edited figures (aAcc, fAcc, qAcc)",
                "HallusionBench's terms (github.com/tianyi-lab/HallusionBench)" + _UNVERIFIED, format="vqa-tsv"),
    _vlmevalkit("MMVet", f"{_OC}/VLMEval/MMVet.tsv", "748aa6d4aa9d4de798306a63718455e3",
                "MM-Vet: open questions on integrated capabilities, graded by an LLM",
                "MM-Vet's terms (github.com/yuweihao/MM-Vet)" + _UNVERIFIED, format="vqa-tsv"),
    # Open questions with reference answers (image_vqa.py, image_caption.py): VQA accuracy, ANLS, CIDEr and the like
    _vlmevalkit("TextVQA_VAL", f"{_OC}/VLMEval/TextVQA_VAL.tsv", "b233b31f551bbf4056f2f955da3a92cd",
                "TextVQA val: questions about text in photos, ten answers each", _TEXTVQA_TERMS, format="vqa-tsv",
                groups=_VQA_GROUP),
    _vlmevalkit("DocVQA_VAL", f"{_OC}/VLMEval/DocVQA_VAL.tsv", "d5ee77e1926ff10690d469c56b73eabf",
                "DocVQA val: questions about document pages", _DOCVQA_TERMS, format="vqa-tsv",
                groups=_VQA_GROUP),
    _vlmevalkit("InfoVQA_VAL", f"{_OC}/VLMEval/InfoVQA_VAL.tsv", "2342e9c225222f0ef4dec545ebb126fe",
                "InfographicVQA val: questions about infographics", _DOCVQA_TERMS, format="vqa-tsv"),
    _vlmevalkit("ChartQA_TEST", f"{_OC}/VLMEval/ChartQA_TEST.tsv", "c902e0aa9be5582a7aad6dcf52734b42",
                "ChartQA test: questions about charts (human and augmented splits)",
                "ChartQA's terms (github.com/vis-nlp/ChartQA)" + _UNVERIFIED, format="vqa-tsv"),
    _vlmevalkit("OCRVQA_TEST", f"{_OC}/VLMEval/OCRVQA_TEST.tsv", "ca46a6d74b403e9d6c0b670f6fc00db9",
                "OCR-VQA test: questions about book covers", _OCRVQA_TERMS, format="vqa-tsv",
                groups=_VQA_GROUP),
    _vlmevalkit("OCRVQA_TESTCORE", f"{_OC}/VLMEval/OCRVQA_TESTCORE.tsv", "c5239fe77db8bdc1f2ad8e55e0d1fe97",
                "OCR-VQA test, VLMEvalKit's core subset", _OCRVQA_TERMS, format="vqa-tsv",
                groups=_VQA_GROUP),
    _vlmevalkit("COCO_VAL", f"{_OC}/VLMEval/COCO_VAL.tsv", "72a5079dead060269ac222c5aa5128af",
                "COCO captions val: five reference captions per image", _COCO_TERMS, format="vqa-tsv"),
    # lmms-lab's parquet layout of the same benchmarks (lmms-eval task names)
    _lmms("mmbench_en_dev", "lmms-lab/MMBench", "en", "dev", "MMBench dev, English (lmms-lab parquet)", "parquet",
          _MMBENCH_TERMS, same_as="MMBench_DEV_EN"),
    _lmms("mmbench_en_test", "lmms-lab/MMBench", "en", "test", "MMBench test, English (lmms-lab parquet)", "parquet",
          _MMBENCH_TERMS, same_as="MMBench_TEST_EN"),
    _lmms("mmbench_cn_dev", "lmms-lab/MMBench", "cn", "dev", "MMBench dev, Chinese (lmms-lab parquet)", "parquet",
          _MMBENCH_TERMS, same_as="MMBench_DEV_CN"),
    _lmms("mmbench_cn_test", "lmms-lab/MMBench", "cn", "test", "MMBench test, Chinese (lmms-lab parquet)", "parquet",
          _MMBENCH_TERMS, same_as="MMBench_TEST_CN"),
    _lmms("mmbench_cn_cc", "lmms-lab/MMBench", "cc", "test", "CCBench (lmms-lab parquet)", "parquet", _MMBENCH_TERMS,
          same_as="CCBench"),
    _lmms("pope_random", "lmms-lab/POPE", "Full", "random", "POPE random (lmms-lab parquet)", "pope-parquet",
          _POPE_TERMS, setting="random", same_as="POPE", groups=("hallucination",)),
    _lmms("pope_pop", "lmms-lab/POPE", "Full", "popular", "POPE popular (lmms-lab parquet)", "pope-parquet",
          _POPE_TERMS, setting="popular", same_as="POPE", groups=("hallucination",)),
    _lmms("pope_adv", "lmms-lab/POPE", "Full", "adversarial", "POPE adversarial (lmms-lab parquet)", "pope-parquet",
          _POPE_TERMS, setting="adversarial", same_as="POPE", groups=("hallucination",)),
    _lmms("textvqa_val", "lmms-lab/textvqa", "data", "validation", "TextVQA val (lmms-lab parquet)", "vqa-parquet",
          _TEXTVQA_TERMS, same_as="TextVQA_VAL", groups=_VQA_GROUP),
    _lmms("docvqa_val", "lmms-lab/DocVQA", "DocVQA", "validation", "DocVQA val (lmms-lab parquet)", "vqa-parquet",
          _DOCVQA_TERMS, same_as="DocVQA_VAL", groups=_VQA_GROUP),
    _lmms("infovqa_val", "lmms-lab/DocVQA", "InfographicVQA", "validation", "InfographicVQA val (lmms-lab parquet)",
          "vqa-parquet", _DOCVQA_TERMS, same_as="InfoVQA_VAL"),
    _lmms("chartqa", "lmms-lab/ChartQA", "data", "test", "ChartQA test (lmms-lab parquet)", "vqa-parquet",
          "ChartQA's terms (github.com/vis-nlp/ChartQA)" + _UNVERIFIED, same_as="ChartQA_TEST"),
    _lmms("coco2017_cap_val", "lmms-lab/COCO-Caption2017", "data", "val", "COCO 2017 captions val (lmms-lab parquet)",
          "vqa-parquet", _COCO_TERMS),
    _lmms("vqav2_val", "lmms-lab/VQAv2", "data", "validation", "VQAv2 val: ten answers per question (lmms-lab parquet)",
          "vqa-parquet", "VQA's terms: annotations CC BY 4.0 (visualqa.org); images from COCO (Flickr licences)"),
    _lmms("ok_vqa_val2014", "lmms-lab/OK-VQA", "data", "val2014", "OK-VQA val2014 (lmms-lab parquet)", "vqa-parquet",
          "OK-VQA's terms (okvqa.allenai.org); images from COCO (Flickr licences)" + _UNVERIFIED, groups=_VQA_GROUP),
)  # fmt: skip


# ------------------------------------------------------------------------------------------------ reading


def catalog() -> tuple[CatalogEntry, ...]:
    """The built-in entries, with those of $VLMDESK_CATALOG (replacing a built-in of the same name) after them."""
    extra = _extra_entries()
    names = {e.name for e in extra}
    return tuple(e for e in BUILTIN if e.name not in names) + extra


def find(name: str) -> CatalogEntry | None:
    """The entry named `name` (exactly, then ignoring case), or None."""
    entries = catalog()
    found = next((e for e in entries if e.name == name or name in e.aliases), None)
    if found is None:
        folded = name.casefold()
        matches = [e for e in entries if e.name.casefold() == folded]
        found = matches[0] if len(matches) == 1 else None
    return found


def entry_or_fail(name: str) -> CatalogEntry:
    found = find(name)
    if found is None:
        raise NotFound(f"no benchmark named {name[:60]!r} in the catalog (vlmdesk fetch --list shows them)")
    return found


def _extra_entries() -> tuple[CatalogEntry, ...]:
    path_text = os.environ.get(CATALOG_ENV)
    if not path_text:
        return ()
    path = Path(path_text).expanduser()
    where = f"{path} (${CATALOG_ENV})"
    try:  # the bounded door: a FIFO or a device there is refused, never opened to wait on
        with open_regular(path, MAX_CATALOG_BYTES, "size a catalog may have") as f:
            raw = f.read(MAX_CATALOG_BYTES + 1)
    except Refused as exc:
        raise InvalidInput(f"{exc} (${CATALOG_ENV})") from None
    except OSError as exc:
        raise InvalidInput(f"{where}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CATALOG_BYTES:
        raise InvalidInput(f"{where}: over {MAX_CATALOG_BYTES} bytes; a catalog is a short list")
    try:
        data = json_loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{where}: not JSON ({str(exc)[:120]})") from None
    if not isinstance(data, list):
        raise InvalidInput(f"{where}: must be a JSON list of entries")
    entries = tuple(entry_from_json(obj, f"{where} entry {n + 1}") for n, obj in enumerate(data))
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise InvalidInput(f"{where}: the name {e.name!r} is given twice")
        seen.add(e.name)
    return entries


_FIELDS = {
    "name", "layout", "title", "format", "licence", "url", "checksum", "size", "repo", "revision", "config", "split",
    "setting", "settings", "same_as", "aliases", "groups", "kind",
}  # fmt: skip


def entry_from_json(obj: object, where: str) -> CatalogEntry:
    """One entry of a catalog file, checked field by field (every problem names the entry and the field)."""
    from evaluator.analysis.groups import check_groups, group_names
    from evaluator.formats import registry as formats

    def bad(name: str, what: str) -> InvalidInput:
        return InvalidInput(f"{where}: {name}: {what}")

    if not isinstance(obj, dict):
        raise InvalidInput(f"{where}: must be a JSON object")
    unknown = sorted(set(obj) - _FIELDS)
    if unknown:
        raise bad(unknown[0], f"unknown field (known: {', '.join(sorted(_FIELDS))})")

    def text(name: str, required: bool = False, limit: int = 300) -> str | None:
        value = obj.get(name)
        if value is None:
            if required:
                raise bad(name, "missing")
            return None
        if not isinstance(value, str) or not value.strip() or len(value) > limit or not value.isprintable():
            raise bad(name, f"must be one line of printable text of at most {limit} characters")
        return value

    name = text("name", True)
    assert name is not None
    if not _NAME.match(name):
        raise bad("name", "letters, digits, '.', '_' and '-' only, at most 100, starting with a letter or digit")
    layout = text("layout") or "vlmevalkit"
    if layout not in ("vlmevalkit", "lmms-lab"):
        raise bad("layout", "must be 'vlmevalkit' (one file at a URL) or 'lmms-lab' (parquet shards on the hub)")
    fmt = text("format") or ("mmbench-tsv" if layout == "vlmevalkit" else "parquet")
    if formats.get(fmt) is None:
        raise bad("format", f"unknown format {fmt!r} ({', '.join(formats.format_names())})")
    kind = obj.get("kind")  # said by the format; a file may repeat it (as --list --json writes it), never contradict it
    if kind is not None and kind != formats.REGISTRY[fmt].kind:
        raise bad("kind", f"format {fmt} makes {formats.REGISTRY[fmt].kind} benchmarks, not {str(kind)[:20]!r}")
    checksum = text("checksum")
    if checksum is not None:
        checksum = checksum.lower()
        if not _CHECKSUM.match(checksum):
            raise bad("checksum", "must be 'md5:' and 32 hex digits, or 'sha256:' and 64")
    size = obj.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= 2**45):
        raise bad("size", "must be a positive number of bytes")
    url = text("url", limit=2000)
    repo, config, split = text("repo"), text("config"), text("split")
    if layout == "vlmevalkit":
        if url is None or not re.match(r"^https?://[^/\s]+/\S+$", url):
            raise bad("url", "an http(s) URL of the file is needed")
        if _url_file_name(url) is None:
            raise bad("url", "must end in a file name (letters, digits, '.', '_', '-')")
        if checksum is None:
            raise bad("checksum", "missing: a file is only imported once its checksum matches")
    else:
        if repo is None or not _REPO.match(repo):
            raise bad("repo", "a hub dataset repository, OWNER/NAME, is needed")
        for part_name, part in (("config", config), ("split", split)):
            if part is None or not _PATH_PART.match(part):
                raise bad(part_name, "needed: letters, digits, '.', '_' and '-'")
        if checksum is not None:
            raise bad("checksum", "an lmms-lab entry is checked against the hub's SHA-256 of each shard; give none")
    setting = text("setting")
    settings_value = obj.get("settings") or []
    if setting is not None and setting not in POPE_SETTINGS:
        raise bad("setting", f"one of {', '.join(POPE_SETTINGS)}")
    if not isinstance(settings_value, list) or any(s not in POPE_SETTINGS for s in settings_value):
        raise bad("settings", f"a list of {', '.join(POPE_SETTINGS)}")
    aliases = obj.get("aliases") or []
    if not isinstance(aliases, list) or any(not isinstance(a, str) or not _NAME.match(a) for a in aliases):
        raise bad("aliases", "a list of names")
    groups_value = obj.get("groups") or []
    if not isinstance(groups_value, list):
        raise bad("groups", f"a list of capability groups ({group_names()})")
    groups = check_groups(groups_value, f"{where}: groups")
    revision = text("revision") or "main"
    if not _PATH_PART.match(revision):
        raise bad("revision", "a branch, tag or commit: letters, digits, '.', '_' and '-'")
    return CatalogEntry(
        name=name,
        layout="lmms-lab" if layout == "lmms-lab" else "vlmevalkit",
        title=text("title") or name,
        format=fmt,
        licence=text("licence") or "not stated",
        url=url,
        checksum=checksum,
        size=size,
        repo=repo,
        revision=revision,
        config=config,
        split=split,
        setting=setting,
        settings=tuple(settings_value),
        same_as=text("same_as"),
        aliases=tuple(aliases),
        groups=groups,
    )


def dumps(entries: tuple[CatalogEntry, ...]) -> str:
    return json.dumps([e.to_json() for e in entries], ensure_ascii=False)
