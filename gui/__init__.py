"""The desktop app (PySide6). The only layer that imports Qt."""
