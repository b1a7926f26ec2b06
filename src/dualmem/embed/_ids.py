"""Token ids of a long text's windows from ONE untruncated tokenisation (MiniLM's fast path).

A window's vector has always been the embedding of the window's *text* (the characters its tokens
cover), re-tokenised. Re-tokenising gives the same ids as slicing the text's own ids except at a
window edge that cuts a word: BERT's pre-tokenizer splits on whitespace and punctuation only, and
WordPiece reads each piece on its own, so a window that starts in the middle of "unaffable" reads
"ffable" afresh ("ff", "##able"), not "##ffa", "##ble". So the ids here are the sliced ids with the
(at most two) cut words at the edges tokenised again, which equals tokenising the whole window text
(tested against it on real texts) at a fraction of the cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["window_ids", "window_spans"]

Encode = Callable[[str], list[int]]


def window_spans(n: int, *, capacity: int, size: int, stride: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` token spans of a text's extra windows: none when ``n <= capacity``, else
    ``size`` tokens every ``stride`` tokens from the ``stride``-th, the last one ending at the end."""
    spans: list[tuple[int, int]] = []
    start = stride
    while n > capacity:
        end = min(start + size, n)
        spans.append((start, end))
        if end >= n:
            break
        start += stride
    return spans


def window_ids(
    text: str,
    ids: Sequence[int],
    offsets: Sequence[tuple[int, int]],
    words: Sequence[int | None],
    span: tuple[int, int],
    encode: Encode,
) -> list[int]:
    """The ids of ``text[offsets[start][0] : offsets[end - 1][1]]`` tokenised on its own (no special
    tokens, no truncation), from the whole text's ``ids``/``offsets``/``words`` (its word ids)."""
    start, end = span
    lo, hi = start, end
    head: list[int] = []
    tail: list[int] = []
    if start > 0 and words[start] is not None and words[start] == words[start - 1]:
        lo = start + 1  # the window starts inside a word: its rest is read afresh
        while lo < end and words[lo] == words[start]:
            lo += 1
        if lo >= end:  # one word covers the window
            return encode(text[offsets[start][0] : offsets[end - 1][1]])
        head = encode(text[offsets[start][0] : offsets[lo - 1][1]])
    if end < len(words) and words[end] is not None and words[end] == words[end - 1]:
        hi = end - 1  # the window ends inside a word: its first part is read afresh
        while hi > lo and words[hi - 1] == words[end - 1]:
            hi -= 1
        tail = encode(text[offsets[hi][0] : offsets[end - 1][1]])
    return [*head, *ids[lo:hi], *tail]
