"""Bounded retries for remote backends: moved to :mod:`dualmem.http`, re-exported here."""

from __future__ import annotations

from dualmem.http import TRANSIENT_STATUSES, RetryPolicy, TransientStatus, call_with_retry, post_json

__all__ = [
    "TRANSIENT_STATUSES",
    "RetryPolicy",
    "TransientStatus",
    "call_with_retry",
    "post_json",
]
