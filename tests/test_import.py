"""Importing dualmem has no side effects: no heavy imports, no logging changes, no files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECK = """
import logging, os, sys
before = set(os.listdir('.'))
root = logging.getLogger()
handlers, level = list(root.handlers), root.level
import dualmem, dualmem.control, dualmem.embed, dualmem.plane, dualmem.reason, dualmem.bench
assert set(os.listdir('.')) == before, 'files created'
assert root.handlers == handlers and root.level == level, 'root logger changed'
heavy = [m for m in ('onnxruntime', 'tokenizers', 'typesafe_sdk', 'matplotlib', 'spacy') if m in sys.modules]
assert not heavy, heavy
print('ok')
"""


def test_import_is_side_effect_free(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert list(tmp_path.iterdir()) == []
