"""Look-alike tenant ids are one tenant (issue 41, item 5), one rule in ``Tenant`` for every adapter.

"alice " (a trailing space), "ａlice" (fullwidth a), "alice" + U+200B and the decomposed spelling of
an accented id used to be more tenants besides the one they look like. Now ``Tenant`` normalises
each id (Unicode NFKC, invisible characters removed, trimmed): through the Python API, the CLI and
HTTP a look-alike reaches the same memories as the id it looks like, an id with nothing visible is
refused, and ids already normal (ASCII or not) are kept exactly as they were.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dualmem import InvalidInput, Memory, Profile, Tenant, TenantRequired
from dualmem.cli.main import main
from dualmem.server.keys import KeyStore
from dualmem.types import normal_tenant_id, tenant_id_pattern
from server_support import served_memory

QUIET = Profile.builtin().with_(write__consolidation="off")

#: (look-alike, the id it is)
LOOKALIKES = [
    ("alice ", "alice"),
    (" alice", "alice"),
    ("ａlice", "alice"),  # FULLWIDTH LATIN SMALL LETTER A
    ("alice\u200b", "alice"),  # ZERO WIDTH SPACE
    ("al\u00adice", "alice"),  # SOFT HYPHEN
    ("\u2060alice", "alice"),  # WORD JOINER
    ("alice\ufe0f", "alice"),  # VARIATION SELECTOR-16
    ("alice\u3000", "alice"),  # IDEOGRAPHIC SPACE
    ("al\x00ice", "alice"),  # NUL
    ("zoe\u0308", "zoë"),  # e + COMBINING DIAERESIS (NFD)
    ("zoe\u200b\u0308", "zoë"),  # the mark after an invisible character composes all the same
    ("ﬁona", "fiona"),  # LATIN SMALL LIGATURE FI
]
NORMAL = ["alice", "zoë", "用户", "bob smith", "team-7/app", "😀"]
NOTHING_VISIBLE = ["\u200b", "\u200b\u2060", "\x00", "\ufe0f \u3000"]


def test_the_rule_keeps_normal_ids_and_maps_each_lookalike_to_its_id() -> None:
    for lookalike, normal in LOOKALIKES:
        assert normal_tenant_id(lookalike) == normal
        assert Tenant(lookalike, lookalike, lookalike) == Tenant(normal, normal, normal)
        assert normal_tenant_id(normal) == normal  # idempotent
    for normal in NORMAL:
        assert Tenant(normal, normal, normal).user == normal
    for blank in NOTHING_VISIBLE:
        with pytest.raises(TenantRequired):
            Tenant(blank)
        with pytest.raises(InvalidInput):
            Tenant("alice", blank)


def test_the_http_schema_pattern_says_what_tenant_accepts() -> None:
    pattern = re.compile(tenant_id_pattern())
    for accepted in [*NORMAL, *(lookalike for lookalike, _ in LOOKALIKES), "\u200bx"]:
        assert pattern.search(accepted), accepted
    for refused in NOTHING_VISIBLE:
        assert not pattern.search(refused), refused
    for code in range(0x110000):  # one character alone: the pattern and the rule agree everywhere
        char = chr(code)
        assert bool(pattern.search(char)) == bool(normal_tenant_id(char)), hex(code)


@pytest.mark.parametrize(("lookalike", "normal"), LOOKALIKES)
def test_the_python_api_puts_a_lookalike_in_the_tenant_it_looks_like(
    tmp_path: Path, lookalike: str, normal: str
) -> None:
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=QUIET) as mem:
        first = mem.add("The locker code is 4471.", user=normal, agent="helper")
        for kwargs in ({"user": lookalike}, {"user": lookalike, "agent": "ｈelper\u200b "}):
            hits = mem.search("locker code", **kwargs).evidence
            assert [e.node.id for e in hits] == [first], kwargs
        second = mem.add("The bike is blue.", user=lookalike, agent="helper")
        assert mem.get(second, user=normal).tenant == Tenant(normal, "helper")
        assert mem.scope(lookalike).count() == 2
        assert [u["user"] for u in mem.stats_all()["users"]] == [normal]  # type: ignore[index]


def test_ids_already_normal_are_unaffected_and_read_back_after_reopening(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        for user in NORMAL:
            mem.add(f"{user} keeps the spare key under the mat.", user=user, agent="helper", run="r1")
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        for user in NORMAL:
            hits = mem.search("spare key", user=user, agent="helper").evidence
            assert [e.node.content for e in hits] == [f"{user} keeps the spare key under the mat."]
            assert hits[0].node.tenant == Tenant(user, "helper", "r1")
            assert hits[0].node.tenant.user == user  # stored and read back as it was


def test_the_cli_uses_the_normal_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["-q", "--db", str(tmp_path / "m.db"), "--embedder", "hashing", "--format", "json"]
    assert main([*argv, "--user", "alice", "add", "Alice's locker code is 4471."]) == 0
    capsys.readouterr()
    assert main([*argv, "--user", "ａlice ", "search", "locker code"]) == 0
    assert "Alice's locker code is 4471." in json.dumps(json.loads(capsys.readouterr().out)["evidence"][0])
    assert main([*argv, "--user", "\u200b", "add", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no visible character" in err


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    with served_memory(tmp_path) as running:
        yield running


def test_http_keys_for_lookalikes_are_keys_of_the_normal_tenant(served: tuple[str, KeyStore, Memory]) -> None:
    url, keys, mem = served
    _, admin = keys.create(admin=True)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=30) as http:
        alice = http.post("/v1/keys", json={"user": "alice"}).json()["token"]
        tokens = []
        for lookalike, normal in LOOKALIKES:
            made = http.post("/v1/keys", json={"user": lookalike, "agent": lookalike})
            assert made.status_code == 201, made.text
            assert (made.json()["key"]["user"], made.json()["key"]["agent"]) == (normal, normal)
            if normal == "alice":
                tokens.append(made.json()["token"])
        for blank in NOTHING_VISIBLE:
            r = http.post("/v1/keys", json={"user": blank})
            assert r.status_code == 400, r.text  # as a blank user id: tenant-required
            assert r.json()["code"] == "tenant-required"
            assert r.headers["content-type"].startswith("application/problem+json")
        assert {k.user for k in keys.list() if not k.admin} == {"alice", "zoë", "fiona"}
        schema = http.get("/openapi.json").json()
        assert "pattern" in json.dumps(schema["components"]["schemas"]["KeyCreate"])
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {alice}"}, timeout=30) as http:
        assert http.post("/v1/memories", json={"observations": [{"text": "tea"}]}).status_code == 201
    for token in tokens:  # a key made for a look-alike of alice is a key of alice (agent 'alice')
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            assert http.get("/v1/whoami").json()["tenant"]["user"] == "alice"
    assert mem.count(user="alice") == 1
