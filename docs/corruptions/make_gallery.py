"""Draw docs/corruptions/gallery.png: one demo photograph under ImageNet-C's 15 corruptions at severities 1, 3, 5,
exactly as `vlmdesk run --corrupt image:NAME:SEVERITY` makes them (evaluator/engine/corruptions.py, seed 0).

    PYTHONPATH=. python docs/corruptions/make_gallery.py [PHOTO] [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from evaluator.engine.corruptions import IMAGE_CORRUPTIONS, corrupt_array

ROOT = Path(__file__).resolve().parents[2]
SEVERITIES = (1, 3, 5)
THUMB = 136
LABEL_W = 140
HEAD_H = 26
PAD = 4


def main() -> None:
    photo_path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "assets/demo/images/cat.jpg"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).with_name("gallery.png")
    photo = Image.open(photo_path).convert("RGB")
    photo.thumbnail((THUMB * 2, THUMB * 2))
    font = ImageFont.load_default(size=15)
    cols = 1 + len(SEVERITIES)
    width = LABEL_W + cols * (THUMB + PAD)
    rows = len(IMAGE_CORRUPTIONS)
    row_h = round(THUMB * photo.height / photo.width) + PAD
    sheet = Image.new("RGB", (width, HEAD_H + rows * row_h), "white")
    draw = ImageDraw.Draw(sheet)
    for c, title in enumerate(["original", *(f"severity {s}" for s in SEVERITIES)]):
        draw.text((LABEL_W + c * (THUMB + PAD) + 4, 5), title, fill="black", font=font)
    for r, name in enumerate(IMAGE_CORRUPTIONS):
        y = HEAD_H + r * row_h
        draw.text((6, y + row_h // 2 - 9), name.replace("_", " "), fill="black", font=font)
        shots = [photo, *(corrupt_array(photo, name, s, seed=0) for s in SEVERITIES)]
        for c, image in enumerate(shots):
            assert image.size == photo.size  # corruptions never change the size
            sheet.paste(image.resize((THUMB, row_h - PAD)), (LABEL_W + c * (THUMB + PAD), y))
    sheet.save(out, optimize=True)
    print(f"{out}: {sheet.width}×{sheet.height}, {len(IMAGE_CORRUPTIONS)} corruptions × severities {SEVERITIES}")


if __name__ == "__main__":
    main()
