"""Bytes a caller hands over as text (a file, stdin): UTF-8, or a one-line ``InvalidInput`` saying why not.

A binary file (an image, a database, a zip) is refused for what it is, before any parser sees it:
a NUL byte (which no text file holds; UTF-16 text has one in every ASCII character) or a byte
sequence that is not UTF-8 is named with its offset. A UTF-8 byte-order mark is dropped.
"""

from __future__ import annotations

from pathlib import Path

from dualmem.errors import InvalidInput

__all__ = ["decode_text", "read_text_file"]


def decode_text(data: bytes, name: str, *, hint: str | None = None) -> str:
    """``data`` as UTF-8 text; ``InvalidInput`` naming ``name`` and the first offending byte otherwise."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InvalidInput(
            f"{name} is binary, not text (a NUL byte at offset {nul})",
            hint=hint or "pass a UTF-8 text file (UTF-16 text: convert it to UTF-8 first)",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}: binary data "
            "or another encoding)",
            hint=hint or "pass a UTF-8 text file (convert it first, e.g. iconv -t UTF-8)",
        ) from None


def read_text_file(path: str | Path, *, hint: str | None = None) -> str:
    """The UTF-8 text of the file at ``path``; a missing file, a folder, an unreadable or a binary
    file is ``InvalidInput`` with a one-line reason."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InvalidInput(f"{path} is a folder, not a file") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    return decode_text(data, str(path), hint=hint)
