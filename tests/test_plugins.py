"""Extension points: a plug-in package, built here as a real wheel and installed into a temporary folder
(never the shared environment), is used by name from Python, the CLI and HTTP, for every kind it
registers (embedder, controller, answerer, store); unknown names list what is installed."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dualmem import Memory
from dualmem._registry import Registry
from dualmem.cli import doctor
from dualmem.control import CONTROLLERS, create_controller
from dualmem.embed import EMBEDDERS, create_embedder
from dualmem.errors import ConfigError
from dualmem.plane import STORES, InMemoryStore, open_store
from dualmem.reason import ANSWERERS, create_answerer
from dualmem.server import ServerSettings, create_app
from dualmem.types import Tenant

ROOT = Path(__file__).resolve().parents[1]
DIST = "dualmem_toyplugin"

PLUGIN = textwrap.dedent(
    '''
    """A toy dualmem plug-in: one embedder, controller, answerer and store."""
    import hashlib
    import re

    import numpy as np

    from dualmem.control.builtin import BuiltinController
    from dualmem.embed.base import normalize
    from dualmem.plane import InMemoryStore
    from dualmem.reason.extractive import ExtractiveAnswerer


    class ToyEmbedder:
        """Words hashed into ``dim`` buckets (``toy`` or ``toy:DIM``)."""

        def __init__(self, dim="16", *, salt=""):
            self.dim = int(dim)
            self.name = f"toy-{self.dim}"
            self.salt = salt

        def embed(self, texts):
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                for word in re.findall(r"\\w+", text.lower()):
                    digest = hashlib.sha256((self.salt + word).encode()).digest()
                    out[row, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
            return normalize(out)


    class ToyController(BuiltinController):
        name = "toy-controller"


    class ToyAnswerer(ExtractiveAnswerer):
        name = "toy-answerer"


    def open_toy(url, *, timeout, read_only, synchronous, mmap_size):
        store = InMemoryStore()
        store.opened_from = url
        return store
    '''
)

ENTRY_POINTS = textwrap.dedent(
    f"""
    [dualmem.embedders]
    toy = {DIST}:ToyEmbedder

    [dualmem.controllers]
    toyctl = {DIST}:ToyController

    [dualmem.answerers]
    toyans = {DIST}:ToyAnswerer

    [dualmem.stores]
    toymem = {DIST}:open_toy
    """
)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(folder: Path) -> Path:
    """A wheel of the toy plug-in, written by hand (the zip, its dist-info and RECORD): no build tool."""
    info = "dualmem_toyplugin-0.1.dist-info"
    files = {
        f"{DIST}/__init__.py": PLUGIN.encode(),
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: dualmem-toyplugin\nVersion: 0.1\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: dualmem-tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{info}/entry_points.txt": ENTRY_POINTS.encode(),
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    path = folder / "dualmem_toyplugin-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plug-in installed by pip from its wheel into a folder of its own (not the environment)."""
    work = tmp_path_factory.mktemp("plugin")
    wheel = build_wheel(work)
    target = work / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps"]
    subprocess.run([*pip, "--target", str(target), str(wheel)], check=True, capture_output=True)
    assert (target / "dualmem_toyplugin-0.1.dist-info" / "entry_points.txt").is_file()
    return target


@pytest.fixture
def installed(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plug-in's folder on ``sys.path`` for this test only."""
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop(DIST, None)


def test_without_the_plugin_its_names_are_unknown_and_the_errors_list_what_is_installed() -> None:
    with pytest.raises(ConfigError, match="unknown embedder 'toy'") as caught:
        create_embedder("toy")
    assert "hashing" in (caught.value.hint or "")
    for build, kind in [
        (lambda: create_controller("toyctl"), "controller"),
        (lambda: create_answerer("toyans"), "answerer"),
    ]:
        with pytest.raises(ConfigError, match=f"unknown {kind} 'toy") as caught:
            build()
        assert "dualmem doctor" in (caught.value.hint or "")
    with pytest.raises(ConfigError, match="unknown store scheme 'toymem'") as caught:
        open_store("toymem://x")
    assert "sqlite" in (caught.value.hint or "")
    assert "toy" not in EMBEDDERS


def test_python_builds_every_plugin_kind_by_name(installed: Path) -> None:
    assert "toy" in EMBEDDERS
    assert {"toyctl", "toyans", "toymem"} <= {*CONTROLLERS.names(), *ANSWERERS.names(), *STORES.names()}
    assert create_embedder("toy:24", salt="x").name == "toy-24"
    with Memory.open("toymem://anything", embedder="toy", controller="toyctl", answerer="toyans") as mem:
        assert isinstance(mem.store, InMemoryStore)
        assert mem.store.opened_from == "toymem://anything"  # type: ignore[attr-defined]
        assert (mem.embedder.name, mem.controller.name) == ("toy-16", "toy-controller")
        mem.add("Mira adopted a grey cat named Pixel", user="u")
        mem.add("The quarterly report is due on Friday", user="u")
        hits = mem.search("which cat did Mira adopt", user="u")
        assert hits.evidence[0].node.content == "Mira adopted a grey cat named Pixel"
        assert mem.answer("which cat did Mira adopt", user="u").answerer == "toy-answerer"


def test_the_builtin_ones_win_over_a_plugin_of_the_same_name(installed: Path) -> None:
    registry = Registry("embedder", "dualmem.embedders")
    registry.register("toy", lambda **_: "builtin")
    assert registry.factory("toy")() == "builtin"
    assert [e.origin for e in registry.entries()] == ["builtin"]
    with pytest.raises(ConfigError, match="registered already"):
        registry.register("TOY", lambda **_: None)


def test_doctor_lists_the_plugins_with_their_distribution(installed: Path) -> None:
    found = doctor.installed()
    toy = [e for e in found["embedders"] if e["name"] == "toy"]
    assert toy == [{"name": "toy", "origin": "dualmem-toyplugin 0.1", "target": f"{DIST}:ToyEmbedder"}]
    assert {"name": "hashing", "origin": "builtin", "target": "dualmem.embed:_hashing"} in found["embedders"]
    assert any(e["name"] == "toymem" for e in found["stores"])


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src"), str(ROOT)])}
    env.pop("DUALMEM_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "dualmem.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_uses_the_plugin_by_name(site: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    common = ["--db", db, "--user", "u", "--embedder", "toy", "--controller", "toyctl", "--json"]
    for text in ("Mira adopted a grey cat named Pixel", "The quarterly report is due on Friday"):
        added = _cli(site, *common, "add", text)
        assert added.returncode == 0, added.stderr
    found = _cli(site, *common, "search", "which cat did Mira adopt")
    assert found.returncode == 0, found.stderr
    assert "Mira adopted a grey cat" in json.loads(found.stdout)["evidence"][0]["node"]["content"]
    listed = _cli(site, "--format", "human", "doctor")
    assert listed.returncode == 0, listed.stderr
    assert "toy  [plug-in: dualmem-toyplugin 0.1]" in listed.stdout
    found_json = json.loads(_cli(site, "doctor").stdout)  # a pipe gets JSON
    assert {"name": "toyctl", "origin": "dualmem-toyplugin 0.1", "target": f"{DIST}:ToyController"} in (
        found_json["controllers"]
    )
    wrong = _cli(site, *common[:4], "--embedder", "toyy", "search", "x")
    assert wrong.returncode == 2
    assert "unknown embedder 'toyy'" in wrong.stderr
    assert "toy" in wrong.stderr.split("choose one of:")[1]


def test_http_serves_a_memory_built_from_plugins(installed: Path, tmp_path: Path) -> None:
    settings = ServerSettings(auth=False, tenant=Tenant("u"), rate_limit=None)
    with (
        Memory.open(tmp_path / "http.db", embedder="toy", answerer="toyans") as mem,
        TestClient(create_app(mem, settings=settings)) as client,
    ):
        body = {"observations": [{"text": "Mira adopted a grey cat named Pixel"}, {"text": "Rain later"}]}
        assert client.post("/v1/memories", json=body).status_code == 201
        found = client.post("/v1/search", json={"query": "which cat did Mira adopt"}).json()
        assert found["evidence"][0]["node"]["content"] == "Mira adopted a grey cat named Pixel"
        answered = client.post("/v1/answer", json={"query": "which cat did Mira adopt"}).json()
        assert answered["answerer"] == "toy-answerer"
        assert mem.embedder.name == "toy-16"


def test_serve_and_mcp_open_their_memory_from_plugin_names(installed: Path, tmp_path: Path) -> None:
    """``dualmem serve`` and ``dualmem mcp`` build their memory with ``open_service_memory``."""
    from dualmem.cli.main import build_parser
    from dualmem.cli.serve import open_service_memory

    db = str(tmp_path / "svc.db")
    argv = [
        "--db",
        db,
        "--user",
        "u",
        "--embedder",
        "toy:8",
        "--controller",
        "toyctl",
        "--answerer",
        "toyans",
    ]
    for command in (["serve"], ["mcp"]):
        args = build_parser().parse_args([*argv, *command])
        with open_service_memory(args) as mem:
            assert (mem.embedder.name, mem.controller.name) == ("toy-8", "toy-controller")
            assert mem.answerer is not None
            assert mem.answerer.name == "toy-answerer"
