"""Adapters to other frameworks. Each module needs its own extra and is imported only on use:
:mod:`dualmem.integrations.langgraph` (``[langgraph]``): ``DualmemStore``, a LangGraph ``BaseStore``.
"""

from __future__ import annotations

__all__: list[str] = []
