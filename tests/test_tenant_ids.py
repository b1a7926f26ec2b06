"""Look-alike tenant ids are refused (issue 41, item 5), one rule in ``Tenant`` for every adapter.

"alice " (a trailing space), "ａlice" (fullwidth a), "alice" + U+200B and the decomposed spelling of
an accented id used to be four more tenants besides the one they look like. Now each is
``InvalidInput`` whose hint names the normal spelling, through the Python API, the CLI and HTTP;
ids already in normal form (ASCII or not) work as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dualmem import InvalidInput, Memory, Profile, Tenant
from dualmem.cli.main import main
from dualmem.server.keys import KeyStore
from server_support import served_memory

QUIET = Profile.builtin().with_(write__consolidation="off")

#: (look-alike, the id it passes for)
LOOKALIKES = [
    ("alice ", "alice"),
    (" alice", "alice"),
    ("ａlice", "alice"),  # FULLWIDTH LATIN SMALL LETTER A
    ("alice\u200b", "alice"),  # ZERO WIDTH SPACE
    ("al\u00adice", "alice"),  # SOFT HYPHEN
    ("\u2060alice", "alice"),  # WORD JOINER
    ("alice\ufe0f", "alice"),  # VARIATION SELECTOR-16
    ("alice\u3000", "alice"),  # IDEOGRAPHIC SPACE
    ("zoe\u0308", "zoë"),  # e + COMBINING DIAERESIS (NFD)
    ("ﬁona", "fiona"),  # LATIN SMALL LIGATURE FI
]
NORMAL = ["alice", "zoë", "用户", "bob smith", "team-7/app", "😀"]


@pytest.mark.parametrize(("lookalike", "normal"), LOOKALIKES)
def test_the_python_api_refuses_a_lookalike_and_names_the_normal_id(
    tmp_path: Path, lookalike: str, normal: str
) -> None:
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=QUIET) as mem:
        mem.add("Alice's locker code is 4471.", user=normal)
        for kwargs in (
            {"user": lookalike},
            {"user": normal, "agent": lookalike},
            {"user": normal, "run": lookalike},
        ):
            with pytest.raises(InvalidInput) as info:
                mem.add("Mallory was here.", **kwargs)
            assert repr(normal) in (info.value.hint or "")
            with pytest.raises(InvalidInput):
                mem.search("locker code", **kwargs)  # refused, never an empty answer for a "new" tenant
        with pytest.raises(InvalidInput):
            mem.scope(lookalike)
        assert mem.stats_all()["nodes"] == 1  # nothing written for any look-alike
        assert [u["user"] for u in mem.stats_all()["users"]] == [normal]  # type: ignore[index]


def test_ids_already_normal_are_unaffected_and_read_back_after_reopening(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        for user in NORMAL:
            mem.add(f"{user} keeps the spare key under the mat.", user=user, agent="helper", run="r1")
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        for user in NORMAL:
            assert Tenant(user, "helper", "r1").user == user  # never rewritten
            hits = mem.search("spare key", user=user, agent="helper").evidence
            assert [e.node.content for e in hits] == [f"{user} keeps the spare key under the mat."]
            assert hits[0].node.tenant == Tenant(user, "helper", "r1")


def test_the_cli_refuses_a_lookalike_user_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["-q", "--db", str(tmp_path / "m.db"), "--embedder", "hashing"]
    assert main([*argv, "--user", "alice", "add", "Alice's locker code is 4471."]) == 0
    capsys.readouterr()
    assert main([*argv, "--user", "ａlice", "search", "locker code"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "NFKC" in err
    assert "'alice'" in err
    assert main([*argv, "--user", "alice", "--agent", "bot\u200b", "add", "x"]) == 2
    assert "U+200B" in capsys.readouterr().err


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    with served_memory(tmp_path) as running:
        yield running


def test_http_refuses_a_key_for_a_lookalike_tenant(served: tuple[str, KeyStore, Memory]) -> None:
    url, keys, mem = served
    _, admin = keys.create(admin=True)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=30) as http:
        made = http.post("/v1/keys", json={"user": "alice"})
        assert made.status_code == 201, made.text
        alice = made.json()["token"]
        for lookalike, normal in LOOKALIKES:
            for body in ({"user": lookalike}, {"user": normal, "agent": lookalike}):
                r = http.post("/v1/keys", json=body)
                assert r.status_code == 422, (body, r.text)
                assert r.headers["content-type"].startswith("application/problem+json")
                assert r.json()["code"] == "invalid-input"
                assert repr(normal) in json.dumps(r.json(), ensure_ascii=False), r.json()
        assert [k.user for k in keys.list() if not k.admin] == ["alice"]  # no look-alike key was made
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {alice}"}, timeout=30) as http:
        assert http.post("/v1/memories", json={"observations": [{"text": "tea"}]}).status_code == 201
        assert http.get("/v1/whoami").json()["tenant"]["user"] == "alice"
    assert mem.count(user="alice") == 1
