"""The ImageNet-C corruptions: all 15 × 5 severities, seeded, size-preserving, stronger with severity."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from evaluator.engine.corruptions import IMAGE_CORRUPTIONS, SEVERITIES, corrupt_array, corrupt_image_bytes

# A real photograph (the demo's astronaut), small and not square, so a transposed size would show.
DEMO = "assets/demo/images/astronaut.jpg"


@pytest.fixture(scope="module")
def photo():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return Image.open(root / DEMO).convert("RGB").resize((72, 56))


def distance(a: Image.Image, b: Image.Image) -> float:
    return float(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)).mean())


def test_imagenet_c_has_its_fifteen():
    assert list(IMAGE_CORRUPTIONS) == [
        "gaussian_noise",
        "shot_noise",
        "impulse_noise",
        "defocus_blur",
        "glass_blur",
        "motion_blur",
        "zoom_blur",
        "snow",
        "frost",
        "fog",
        "brightness",
        "contrast",
        "elastic_transform",
        "pixelate",
        "jpeg_compression",
    ]


@pytest.mark.parametrize("name", list(IMAGE_CORRUPTIONS))
def test_each_corruption_keeps_the_size_is_seeded_and_grows_with_severity(photo, name):
    outs = {s: corrupt_array(photo, name, s, seed=11) for s in SEVERITIES}
    for out in outs.values():
        assert out.size == photo.size and out.mode == "RGB"
        assert distance(out, photo) > 0
    assert corrupt_array(photo, name, 3, seed=11).tobytes() == outs[3].tobytes()
    assert distance(outs[5], photo) > distance(outs[1], photo)


@pytest.mark.parametrize("name", ["gaussian_noise", "glass_blur", "motion_blur", "snow", "frost", "fog"])
def test_random_corruptions_differ_between_seeds(photo, name):
    assert corrupt_array(photo, name, 3, seed=1).tobytes() != corrupt_array(photo, name, 3, seed=2).tobytes()


def test_bytes_in_png_out_with_several_steps(photo):
    buf = io.BytesIO()
    photo.save(buf, "JPEG")
    out = corrupt_image_bytes(buf.getvalue(), (("fog", 2), ("gaussian_noise", 1)), seed=5)
    assert out.startswith(b"\x89PNG")
    assert Image.open(io.BytesIO(out)).size == photo.size
    assert out == corrupt_image_bytes(buf.getvalue(), (("fog", 2), ("gaussian_noise", 1)), seed=5)
    with pytest.raises(ValueError):
        corrupt_array(photo, "fog", 6, seed=0)
