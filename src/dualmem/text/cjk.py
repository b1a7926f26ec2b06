"""Chinese, Japanese and Korean text: the script of a text and the words dualmem's cues read in it.

CJK text has no spaces between words, so the English word split (``lexical.tokenize``) keeps a
whole run of Han/kana/hangul as one token. The helpers here find the script of a text and split
a CJK run into overlapping character bigrams (the rule an index without a segmenter uses); the
word lists (question words, stopwords, present/past and update cues) are in ``text/_cjk_words.py``.
Every function returns the empty result for text without a CJK character, so English text takes
exactly the path it took before this module existed.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["CJK_CHARS", "Script", "bigrams", "cjk_runs", "has_cjk", "script_of"]

#: Han (CJK unified ideographs, extension A, compatibility), kana, hangul syllables and jamo
CJK_CHARS = (
    "\u3005\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
)
_RUN = re.compile(f"[{CJK_CHARS}]+")
_ANY = re.compile(f"[{CJK_CHARS}]")
_KANA = re.compile("[\u3040-\u30ff\uff66-\uff9f]")
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")

Script = Literal["zh", "ja", "ko"]


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds at least one Han, kana or hangul character."""
    return _ANY.search(text) is not None


def script_of(text: str) -> Script | None:
    """``"ja"`` when the text holds kana, ``"ko"`` hangul, ``"zh"`` only Han; ``None`` without CJK."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    return "zh" if _ANY.search(text) else None


def cjk_runs(text: str) -> list[str]:
    """The maximal runs of CJK characters in ``text``, in order."""
    return _RUN.findall(text)


def bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of each CJK run (a run of one character is itself), in order."""
    out: list[str] = []
    for run in _RUN.findall(text):
        if len(run) == 1:
            out.append(run)
        else:
            out += [run[i : i + 2] for i in range(len(run) - 1)]
    return out
