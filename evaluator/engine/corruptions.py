"""The 15 ImageNet-C corruptions × severities 1–5 (Hendrycks & Dietterich 2019), seeded and size-preserving.

Written here with numpy, scipy and Pillow from the published definitions (the severity constants are ImageNet-C's)
because the `imagecorruptions` package does not run with this project's numpy 2 / scikit-image (glass_blur and fog
fail; it also needs OpenCV and pkg_resources, and draws from numpy's global random state) — docs/adr/0017.
Two differ from the reference by design: glass blur shuffles pixels locally in one vectorised gather instead of
sequential swaps (the same local displacement, seconds faster), and frost overlays a procedural ice texture instead
of ImageNet-C's six frost photographs (which would have to ship with vlmdesk).

Every function takes an RGB float image in [0, 1] (H × W × 3) and a `numpy.random.Generator`, so a corruption is a
function of (image, name, severity, seed) and nothing else.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from types import ModuleType

import numpy as np
from numpy.typing import NDArray
from PIL import Image


def _ndimage() -> ModuleType:
    """scipy.ndimage, imported when an image is first corrupted: it costs ~0.3 s, and the app imports this module
    (for the corruptions' names) while building its window."""
    import scipy.ndimage

    ndimage: ModuleType = scipy.ndimage
    return ndimage


Array = NDArray[np.float64]
Corruption = Callable[[Array, int, np.random.Generator], Array]

SEVERITIES = (1, 2, 3, 4, 5)


def _f(x: object) -> Array:
    """A float image (scipy's filters are typed as returning Any)."""
    return np.asarray(x, dtype=np.float64)


def _gaussian_noise(x: Array, s: int, rng: np.random.Generator) -> Array:
    c = (0.08, 0.12, 0.18, 0.26, 0.38)[s - 1]
    return x + rng.normal(size=x.shape, scale=c)


def _shot_noise(x: Array, s: int, rng: np.random.Generator) -> Array:
    c = (60, 25, 12, 5, 3)[s - 1]
    return rng.poisson(x * c) / float(c)


def _impulse_noise(x: Array, s: int, rng: np.random.Generator) -> Array:
    amount = (0.03, 0.06, 0.09, 0.17, 0.27)[s - 1]
    # salt & pepper on each value, half salt, half pepper (scikit-image's random_noise 's&p')
    hit = rng.random(x.shape) < amount
    salt = rng.random(x.shape) < 0.5
    out = x.copy()
    out[hit & salt] = 1.0
    out[hit & ~salt] = 0.0
    return out


def _gaussian_blur(x: Array, s: int, rng: np.random.Generator) -> Array:
    sigma = (1, 2, 3, 4, 6)[s - 1]
    return _f(_ndimage().gaussian_filter(x, sigma=(sigma, sigma, 0), mode="nearest", truncate=4.0))


def _glass_blur(x: Array, s: int, rng: np.random.Generator) -> Array:
    sigma, delta, iterations = ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2))[s - 1]
    x = _ndimage().gaussian_filter(x, sigma=(sigma, sigma, 0), mode="nearest")
    h, w = x.shape[:2]
    rows, cols = np.mgrid[0:h, 0:w]
    for _ in range(iterations):
        dy = rng.integers(-delta, delta, size=(h, w))
        dx = rng.integers(-delta, delta, size=(h, w))
        x = x[np.clip(rows + dy, 0, h - 1), np.clip(cols + dx, 0, w - 1)]
    return _f(_ndimage().gaussian_filter(x, sigma=(sigma, sigma, 0), mode="nearest"))


def _disk(radius: float, alias_blur: float) -> Array:
    span = np.arange(-8, 9) if radius <= 8 else np.arange(-math.ceil(radius), math.ceil(radius) + 1)
    xx, yy = np.meshgrid(span, span)
    disk = ((xx**2 + yy**2) <= radius**2).astype(np.float64)
    disk /= disk.sum()
    return _f(_ndimage().gaussian_filter(disk, sigma=alias_blur))


def _defocus_blur(x: Array, s: int, rng: np.random.Generator) -> Array:
    radius, alias = ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5))[s - 1]
    kernel = _disk(radius, alias)
    return np.stack([_ndimage().convolve(x[..., d], kernel, mode="reflect") for d in range(3)], axis=2)


def _shift(image: Array, dx: int, dy: int) -> Array:
    """The image moved by (dx, dy), its edge pixels repeated into the gap."""
    h, w = image.shape[:2]
    ys = np.clip(np.arange(h) - dy, 0, h - 1)
    xs = np.clip(np.arange(w) - dx, 0, w - 1)
    return image[ys][:, xs]


def _motion(x: Array, radius: int, sigma: float, angle: float) -> Array:
    width = radius * 2 + 1
    kernel = np.exp(-(np.arange(width) ** 2) / (2 * sigma**2))
    kernel /= kernel.sum()
    py, px = width * math.sin(math.radians(angle)), width * math.cos(math.radians(angle))
    hyp = math.hypot(py, px)
    out = np.zeros_like(x)
    for i in range(width):
        dy = -math.ceil(i * py / hyp - 0.5)
        dx = -math.ceil(i * px / hyp - 0.5)
        if abs(dy) >= x.shape[0] or abs(dx) >= x.shape[1]:
            break
        out += kernel[i] * _shift(x, dx, dy)
    return out


def _motion_blur(x: Array, s: int, rng: np.random.Generator) -> Array:
    radius, sigma = ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))[s - 1]
    return _motion(x, radius, sigma, rng.uniform(-45, 45))


def _clipped_zoom(img: Array, factor: float) -> Array:
    """The centre of the image zoomed by `factor`, cropped back to the image's size."""
    h, w = img.shape[:2]
    ch, cw = math.ceil(h / factor), math.ceil(w / factor)
    top, left = (h - ch) // 2, (w - cw) // 2
    zoomed = _ndimage().zoom(img[top : top + ch, left : left + cw], (factor, factor, 1)[: img.ndim], order=1)
    out = np.zeros_like(img)
    zh, zw = min(h, zoomed.shape[0]), min(w, zoomed.shape[1])
    out[:zh, :zw] = zoomed[:zh, :zw]
    if zh < h or zw < w:  # rounding left a row or column short: repeat the last one
        out[zh:, :] = out[zh - 1 : zh, :]
        out[:, zw:] = out[:, zw - 1 : zw]
    return out


def _zoom_blur(x: Array, s: int, rng: np.random.Generator) -> Array:
    factors = (
        np.arange(1, 1.11, 0.01),
        np.arange(1, 1.16, 0.01),
        np.arange(1, 1.21, 0.02),
        np.arange(1, 1.26, 0.02),
        np.arange(1, 1.31, 0.03),
    )[s - 1]
    out = x.copy()
    for factor in factors:
        out += _clipped_zoom(x, float(factor))
    return out / (len(factors) + 1)


def _plasma(size: int, decay: float, rng: np.random.Generator) -> Array:
    """A diamond-square height map in [0, 1], `size` a power of two (ImageNet-C's fog layer)."""
    grid = np.zeros((size, size))
    step, wibble = size, 100.0

    def wibbled(a: Array) -> Array:
        return a / 4 + wibble * rng.uniform(-wibble, wibble, a.shape)

    while step >= 2:
        half = step // 2
        corners = grid[0:size:step, 0:size:step]
        acc = corners + np.roll(corners, -1, axis=0)
        acc += np.roll(acc, -1, axis=1)
        grid[half:size:step, half:size:step] = wibbled(acc)
        centres = grid[half:size:step, half:size:step]
        corners = grid[0:size:step, 0:size:step]
        grid[0:size:step, half:size:step] = wibbled(
            centres + np.roll(centres, 1, axis=0) + corners + np.roll(corners, -1, axis=1)
        )
        grid[half:size:step, 0:size:step] = wibbled(
            centres + np.roll(centres, 1, axis=1) + corners + np.roll(corners, -1, axis=0)
        )
        step //= 2
        wibble /= decay
    grid -= grid.min()
    return _f(grid / max(grid.max(), 1e-12))


def _fog(x: Array, s: int, rng: np.random.Generator) -> Array:
    strength, decay = ((1.5, 2), (2.0, 2), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4))[s - 1]
    h, w = x.shape[:2]
    size = 1 << (max(h, w) - 1).bit_length()
    top = x.max()
    x = x + strength * _plasma(size, decay, rng)[:h, :w, None]
    return _f(x * top / (top + strength))


def _frost(x: Array, s: int, rng: np.random.Generator) -> Array:
    keep, amount = ((1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75))[s - 1]
    h, w = x.shape[:2]
    size = 1 << (max(h, w) - 1).bit_length()
    # Procedural ice: a fine plasma texture sharpened into bright crystal edges, slightly blue.
    fine = _plasma(size, 1.3, rng)[:h, :w]
    edges = np.abs(_ndimage().sobel(fine, 0)) + np.abs(_ndimage().sobel(fine, 1))
    ice = np.clip(0.55 * fine + 2.5 * edges / max(edges.max(), 1e-12), 0, 1)
    frost = 0.75 * ice[..., None] * np.array([0.85, 0.92, 1.0])
    return _f(keep * x + amount * frost)


def _snow(x: Array, s: int, rng: np.random.Generator) -> Array:
    loc, scale, zoom, threshold, radius, sigma, keep = (
        (0.1, 0.3, 3, 0.5, 10, 4, 0.8),
        (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
        (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
        (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
        (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
    )[s - 1]
    layer = rng.normal(size=x.shape[:2], loc=loc, scale=scale)[..., None]
    layer = _clipped_zoom(layer, zoom)
    layer[layer < threshold] = 0
    layer = np.clip(layer, 0, 1)
    layer = _motion(layer, radius, sigma, rng.uniform(-135, -45))
    layer = np.round(layer * 255) / 255
    grey = (x @ np.array([0.299, 0.587, 0.114]))[..., None]
    x = keep * x + (1 - keep) * np.maximum(x, grey * 1.5 + 0.5)
    return x + layer + np.rot90(layer, k=2)


def _hsv(x: Array) -> tuple[Array, Array, Array]:
    top, low = x.max(axis=2), x.min(axis=2)
    chroma = top - low
    sat = np.where(top > 0, chroma / np.maximum(top, 1e-12), 0)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    safe = np.maximum(chroma, 1e-12)
    hue = np.where(top == r, ((g - b) / safe) % 6, np.where(top == g, (b - r) / safe + 2, (r - g) / safe + 4))
    return np.where(chroma > 0, hue / 6, 0), sat, top


def _rgb(h: Array, s: Array, v: Array) -> Array:
    i = np.floor(h * 6).astype(int) % 6
    f = h * 6 - np.floor(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    return np.stack([np.choose(i, [row[c] for row in table]) for c in range(3)], axis=2)


def _brightness(x: Array, s: int, rng: np.random.Generator) -> Array:
    c = (0.1, 0.2, 0.3, 0.4, 0.5)[s - 1]
    h, sat, v = _hsv(x)
    return _rgb(h, sat, np.clip(v + c, 0, 1))


def _contrast(x: Array, s: int, rng: np.random.Generator) -> Array:
    c = (0.4, 0.3, 0.2, 0.1, 0.05)[s - 1]
    means = x.mean(axis=(0, 1), keepdims=True)
    return _f((x - means) * c + means)


def _elastic_transform(x: Array, s: int, rng: np.random.Generator) -> Array:
    h, w = x.shape[:2]
    alpha = (250 * 0.05, 250 * 0.065, 250 * 0.085, 250 * 0.1, 250 * 0.12)[s - 1]
    sigma = (h * 0.01, w * 0.01)
    reach = h * 0.005
    dx = _ndimage().gaussian_filter(rng.uniform(-reach, reach, (h, w)), sigma, mode="reflect", truncate=3) * alpha
    dy = _ndimage().gaussian_filter(rng.uniform(-reach, reach, (h, w)), sigma, mode="reflect", truncate=3) * alpha
    rows, cols = np.mgrid[0:h, 0:w].astype(np.float64)
    coords = [rows + dy, cols + dx]
    return np.stack([_ndimage().map_coordinates(x[..., d], coords, order=1, mode="reflect") for d in range(3)], axis=2)


def _pil(x: Array) -> Image.Image:
    return Image.fromarray(np.uint8(np.clip(x, 0, 1) * 255 + 0.5))


def _pixelate(x: Array, s: int, rng: np.random.Generator) -> Array:
    c = (0.6, 0.5, 0.4, 0.3, 0.25)[s - 1]
    h, w = x.shape[:2]
    small = _pil(x).resize((max(1, int(w * c)), max(1, int(h * c))), Image.Resampling.BOX)
    return np.asarray(small.resize((w, h), Image.Resampling.NEAREST), dtype=np.float64) / 255


def _jpeg_compression(x: Array, s: int, rng: np.random.Generator) -> Array:
    quality = (25, 18, 15, 10, 7)[s - 1]
    buffer = io.BytesIO()
    _pil(x).save(buffer, "JPEG", quality=quality)
    return np.asarray(Image.open(buffer).convert("RGB"), dtype=np.float64) / 255


IMAGE_CORRUPTIONS: dict[str, Corruption] = {
    "gaussian_noise": _gaussian_noise,
    "shot_noise": _shot_noise,
    "impulse_noise": _impulse_noise,
    "defocus_blur": _defocus_blur,
    "glass_blur": _glass_blur,
    "motion_blur": _motion_blur,
    "zoom_blur": _zoom_blur,
    "snow": _snow,
    "frost": _frost,
    "fog": _fog,
    "brightness": _brightness,
    "contrast": _contrast,
    "elastic_transform": _elastic_transform,
    "pixelate": _pixelate,
    "jpeg_compression": _jpeg_compression,
}
"""ImageNet-C's 15 corruptions in its order (noise, blur, weather, digital); gaussian_blur is one of its extras."""
EXTRA_CORRUPTIONS: dict[str, Corruption] = {"gaussian_blur": _gaussian_blur}


def corrupt_array(image: Image.Image, name: str, severity: int, seed: int) -> Image.Image:
    """The image with one corruption applied: RGB, the same size, a function of (image, name, severity, seed)."""
    function = IMAGE_CORRUPTIONS.get(name) or EXTRA_CORRUPTIONS[name]
    if severity not in SEVERITIES:
        raise ValueError(f"severity {severity} is not 1..5")
    x = np.asarray(image.convert("RGB"), dtype=np.float64) / 255
    out = function(x, severity, np.random.default_rng(seed))
    return _pil(out)


def corrupt_image_bytes(data: bytes, steps: tuple[tuple[str, int], ...], seed: int) -> bytes:
    """Encoded image bytes with the corruptions applied in order, as PNG (lossless, so nothing is added but them)."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    for n, (name, severity) in enumerate(steps):
        image = corrupt_array(image, name, severity, seed + n)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()
