"""Running one function on several threads at once, for the concurrency tests."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_threads(target: Callable[[int], object], count: int) -> None:
    """``target(0)`` .. ``target(count - 1)``, each on its own thread, all started, then all joined."""
    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
