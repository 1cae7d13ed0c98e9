"""The window on the screen it opens on: a size and place restored from another session (or the first default) made to
fit the screen's available area, and the Benchmarks dock's width carried over in proportion to the window's.

Pure functions of rectangles, so that they are tested without a screen of each size."""

from __future__ import annotations

from PySide6.QtCore import QMargins, QRect, QSize

# The window manager's frame, before the window is shown and its real frame known: a title bar and thin borders
# (openbox: 1, 20, 1, 5; GNOME and KDE title bars run to about 37). The shown window is fitted again with its own.
FRAME_GUESS = QMargins(4, 40, 4, 8)
DOCK_SHARE_MAX = 1 / 3  # of the window: a dock widened in proportion never takes more


def fit_geometry(window: QRect, available: QRect, frame: QMargins, minimum: QSize) -> QRect:
    """`window` (the client area) shrunk and moved so that it and its `frame` lie within `available`; never smaller
    than `minimum` (a screen smaller than the window's minimum gets the window at its top left corner)."""
    width = min(window.width(), available.width() - frame.left() - frame.right())
    height = min(window.height(), available.height() - frame.top() - frame.bottom())
    width, height = max(width, minimum.width()), max(height, minimum.height())
    left = available.left() + frame.left()
    top = available.top() + frame.top()
    x = max(left, min(window.x(), available.right() + 1 - frame.right() - width))
    y = max(top, min(window.y(), available.bottom() + 1 - frame.bottom() - height))
    return QRect(x, y, width, height)


def dock_width(share: float | None, window_width: int, current: int, preferred: int) -> int:
    """The dock's width in a window `window_width` wide: `share` of it (the dock's share of the window when it was
    closed, None: keep `current`), never narrower than `preferred` (what its content needs) and, beyond that, never
    more than DOCK_SHARE_MAX of the window. A session on a small screen leaves the dock a sensible width on a big one,
    and the reverse."""
    wanted = current if share is None else round(share * window_width)
    return max(preferred, min(wanted, int(window_width * DOCK_SHARE_MAX)))
