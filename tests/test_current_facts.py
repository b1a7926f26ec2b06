"""Current facts first, never at the cost of facts that did not change (slots; read by slot).

A memory of 15 short notes about one person, two of them later updated (employer, partner). Each
question about an updated fact gets its current version first and the replaced one right after it;
a question about a fact nothing updated gets that fact first, whatever later notes say about other
attributes of the same person ("Mira has a new phone" is no update of her medical condition).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.embed import Embedder

NOTES = [
    "Mira works as a nurse at St Anne's Hospital.",
    "Mira's partner is Tomasz.",
    "Mira has type 1 diabetes and carries an insulin pen.",
    "Mira lives in a flat in Clapham.",
    "Mira plays the cello in an amateur orchestra.",
    "Mira's sister Ola lives in Gdansk.",
    "Mira drives a blue Honda Jazz.",
    "Mira is vegetarian.",
    "Mira's birthday is 2 June.",
    "Mira runs 5k every Saturday at parkrun.",
    "Mira speaks Polish and English.",
    "Mira's dentist is Dr. Patel.",
    "Mira supports Arsenal.",
    "Mira has a new phone, a Pixel 8.",
    "Mira takes the Northern line to work.",
]
EMPLOYER = "Mira left St Anne's and now works at Guy's Hospital in the cardiac ward."
PARTNER = "Mira and Tomasz split up; she is seeing Jonah now."


@pytest.fixture(scope="module")
def mira(
    minilm: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Memory, dict[str, str]]]:
    path = tmp_path_factory.mktemp("mira") / "m.db"
    with Memory.open(path, embedder=minilm, answerer=None) as m:
        s = m.scope("u")
        ids = {t: s.add(t, speaker="agent", at=f"2024-03-{i + 1:02d}T10:00:00Z") for i, t in enumerate(NOTES)}
        ids[EMPLOYER] = s.add(EMPLOYER, speaker="agent", at="2024-05-01T10:00:00Z")
        ids[PARTNER] = s.add(PARTNER, speaker="agent", at="2024-05-02T10:00:00Z")
        yield m, ids


def _order(m: Memory, question: str) -> list[str]:
    return [e.node.content for e in m.search(question, user="u", k=10).evidence]


@pytest.mark.parametrize(
    ("question", "note"),
    [
        ("What medical condition does Mira have?", NOTES[2]),
        ("When is Mira's birthday?", NOTES[8]),
        ("What phone does Mira have?", NOTES[13]),
        ("Which languages does Mira speak?", NOTES[10]),
    ],
)
def test_a_fact_nothing_updated_comes_first(
    mira: tuple[Memory, dict[str, str]], question: str, note: str
) -> None:
    m, ids = mira
    assert m.get(ids[note], user="u").valid_to is None  # no later note about another attribute ended it
    order = _order(m, question)
    assert order[0] == note, order


@pytest.mark.parametrize(
    ("question", "current", "old"),
    [
        ("Where does Mira work?", EMPLOYER, NOTES[0]),
        ("Who is Mira's partner?", PARTNER, NOTES[1]),
    ],
)
def test_an_updated_fact_answers_with_its_current_version_and_keeps_the_old_one_next(
    mira: tuple[Memory, dict[str, str]], question: str, current: str, old: str
) -> None:
    m, ids = mira
    assert m.get(ids[old], user="u").valid_to is not None  # the update replaced it
    order = _order(m, question)
    assert order[0] == current, order
    assert order[1] == old, order  # still there, right after the current version
    stale = m.search(question, user="u", k=10).evidence[1].node
    assert stale.valid_to is not None  # marked replaced, with the time it ended


def test_a_question_about_the_past_gets_the_replaced_version_first(
    mira: tuple[Memory, dict[str, str]],
) -> None:
    m, _ = mira
    order = _order(m, "Where did Mira work before?")
    assert order[0] == NOTES[0], order
    assert EMPLOYER in order[:3], order


def test_a_fact_updated_ten_times_answers_with_its_last_version(minilm: Embedder, tmp_path: Path) -> None:
    """Chains of any length: each ``update`` makes a new version; the question gets the tenth, and
    the versions before it follow it, newest first."""
    with Memory.open(tmp_path / "c.db", embedder=minilm, answerer=None) as m:
        s = m.scope("u")
        s.add("Mira drinks green tea every morning.", speaker="agent", at="2024-01-01T08:00:00Z")
        at = s.add("The staging server listens on port 8000.", speaker="agent", at="2024-01-01T09:00:00Z")
        versions = [at]
        for i in range(1, 11):
            at = s.update(
                at, f"The staging server listens on port {8000 + i}.", at=f"2024-02-{i:02d}T09:00:00Z"
            )
            versions.append(at)
        found = [e.node.id for e in s.search("Which port does the staging server listen on?", k=12).evidence]
        assert found[0] == versions[-1]
        assert found[1:4] == versions[-2:-5:-1]  # the replaced ones right after it, newest first


def test_additive_facts_of_one_slot_stay_current(minilm: Embedder, tmp_path: Path) -> None:
    from dualmem.text.slots import may_replace, slot_of

    dog, cat = "User adopted a dog named Rex.", "User adopted a cat named Tom."
    assert slot_of(dog) == slot_of(cat)
    assert not may_replace(slot_of(cat), slot_of(dog), cat)  # a second pet, not a new one
    gone = "Rex was rehomed; User has a cat named Tom instead."
    assert may_replace(slot_of(gone), slot_of(dog), gone)
    with Memory.open(tmp_path / "a.db", embedder=minilm, answerer=None) as m:
        s = m.scope("u")
        first = s.add(dog, speaker="agent", at="2024-01-01T08:00:00Z")
        s.add(cat, speaker="agent", at="2024-02-01T08:00:00Z")
        assert m.get(first, user="u").valid_to is None
        found = [e.node.content for e in s.search("What is the name of the user's dog?", k=5).evidence]
        assert found[0] == dog


def test_the_slot_of_a_note_is_read_from_its_structure() -> None:
    from dualmem.text.slots import Slot, query_slot, slot_of

    assert slot_of("Priya's home address is 4 Elm Row.") == Slot("priya", "home")
    assert slot_of("User switched to uv instead of pip.") == Slot("user", "package manager")
    assert slot_of("I moved to Hamburg last week.", "user") == Slot("user", "home")
    assert slot_of("Mira's sister Ola lives in Gdansk.") == Slot("ola", "home")
    assert slot_of("The billing service's database is Postgres 15.") == Slot("billing service", "database")
    assert slot_of("Mira left St Anne's and now works at Guy's Hospital.").attribute == "employer"
    assert query_slot("What medical condition does Mira have?") == Slot("mira", "medical condition")
    assert Slot.parse(str(Slot("tom", "employer"))) == Slot("tom", "employer")
    assert Slot.parse("? · car") == Slot(None, "car")


def test_a_dwelling_noun_that_heads_a_place_name_is_no_home() -> None:
    """ "the tea house" is where pancakes were had, not where anyone lives: read as a home, it made a
    brunch note the current version of a move (same slot, newer)."""
    from dualmem.text.slots import slot_of

    assert slot_of("Mira: We had pancakes at the tea house on Saturday.").attribute is None
    assert slot_of("We stayed at a guest house by the sea.").attribute is None
    assert slot_of("We bought a house in Leeds.").attribute == "home"
    assert slot_of("Our new flat in Lombok has a balcony.").attribute == "home"


def test_the_slot_is_recorded_shown_by_inspect_and_kept_by_export(
    mira: tuple[Memory, dict[str, str]], minilm: Embedder, tmp_path: Path
) -> None:
    from dualmem.cli.render import render_inspect
    from dualmem.wire.schemas import inspection_out

    m, ids = mira
    info = m.inspect(ids[NOTES[2]], user="u")
    slots = [d for d in info.decisions if d.key == "write.slot"]
    assert [d.label for d in slots] == ["mira · medical condition"]
    assert "slot: mira · medical condition" in render_inspect(inspection_out(info).model_dump(mode="json"))
    path = tmp_path / "mira.jsonl"
    m.export_jsonl(path, user="u")
    with Memory.open(tmp_path / "copy.db", embedder=minilm, answerer=None) as copy:
        copy.import_jsonl(path, user="u")
        again = copy.inspect(ids[NOTES[2]], user="u")
        assert [d.label for d in again.decisions if d.key == "write.slot"] == ["mira · medical condition"]


def test_a_question_about_a_slot_is_not_moved_by_a_supersession_from_outside_it(
    minilm: Embedder, tmp_path: Path
) -> None:
    """The write path superseded the asthma note by a later note of no known slot (a System One that
    says "update" to every pair): the question about the medical condition still gets the asthma
    note first, and a question about nothing in particular still gets the later note first."""
    from dualmem import Profile
    from dualmem.control.scripted import ScriptedController

    table = {
        "relation.supersedes": 0.95,
        "relation.time": "unknown",
        "consolidate.representation": "uncertain",
    }
    eager = ScriptedController(table, default=0.1)  # type: ignore[arg-type]
    with Memory.open(
        tmp_path / "e.db", embedder=minilm, controller=eager, answerer=None, profile=Profile.dualmem()
    ) as m:
        s = m.scope("u")
        asthma = s.add("Jon has asthma and carries an inhaler.", speaker="agent", at="2024-03-01T10:00:00Z")
        trip = s.add("Jon booked a trip to Oslo for May.", speaker="agent", at="2024-04-01T10:00:00Z")
        assert s.get(asthma).valid_to is not None  # superseded at write time (wrongly)
        found = [e.node.id for e in s.search("What medical condition does Jon have?", k=2).evidence]
        assert found == [asthma, trip]
        found = [e.node.id for e in s.search("What is going on with Jon?", k=2).evidence]
        assert found == [trip, asthma]  # no slot asked: the written version rule holds


def test_two_notes_state_one_fact_when_close_and_the_newer_says_it_changed() -> None:
    from dualmem.errors import InvalidInput
    from dualmem.text.slots import same_fact, slot_of, states_update

    old, new = "Daily step goal: 8,000.", "Step target bumped to 10k now the knee has settled."
    a, b = slot_of(old), slot_of(new)
    assert not a.same(b)  # neither text names a slot the cues know
    assert states_update(new)
    assert not states_update(old)
    assert same_fact(a, b, new, 0.52)
    assert not same_fact(a, b, new, 0.45)  # not close enough
    assert not same_fact(a, b, "Step target: 10k.", 0.9)  # nothing says it changed
    assert not same_fact(a, b, new, 0.9, speakers=("assistant", "user"))  # a suggestion is no fact
    phone, plan = slot_of("Mira's phone is a Pixel 7."), slot_of("Mira moved to the family plan now.")
    assert not same_fact(phone, plan, "Mira moved to the family plan now.", 0.9)  # two known attributes
    with pytest.raises(InvalidInput):
        same_fact(a, b, new, float("nan"))


def test_versions_the_write_path_did_not_link_answer_newest_first(minilm: Embedder, tmp_path: Path) -> None:
    """``read.pair_cosine``: a present-tense question whose best results hold an older and a newer
    note of one fact (nothing superseded at write time) gets the newer first, the older right after;
    a question about another note is untouched, and a question about the past is not reordered."""
    from dualmem import Profile
    from dualmem.control.scripted import ScriptedController

    path = tmp_path / "p.db"
    table = {
        "relation.supersedes": 0.0,
        "relation.time": "unknown",
        "consolidate.representation": "uncertain",
    }
    writer = ScriptedController(table, default=0.1)  # type: ignore[arg-type]
    old, new = "Daily step goal: 8,000.", "Step target bumped to 10k now the knee has settled."
    with Memory.open(path, embedder=minilm, controller=writer, answerer=None) as m:
        s = m.scope("u")
        for i, t in enumerate(NOTES[:6]):
            s.add(t, speaker="agent", at=f"2024-03-{i + 1:02d}T10:00:00Z")
        ids = {
            t: s.add(t, speaker="agent", at=at)
            for t, at in ((old, "2024-03-10T10:00:00Z"), (new, "2024-05-01T10:00:00Z"))
        }
        assert s.get(ids[old]).valid_to is None  # the write path linked nothing
    orders = {}
    for cosine in (None, 0.5):
        profile = Profile.builtin().with_(read__pair_cosine=cosine, read__likely_update=None)
        with Memory.open(path, embedder=minilm, answerer=None, profile=profile) as m:
            orders[cosine] = [
                e.node.content for e in m.search("What is the daily step goal?", user="u", k=10).evidence
            ]
            other = [
                e.node.content for e in m.search("What instrument does Mira play?", user="u", k=10).evidence
            ]
            assert other[0] == NOTES[4]
    assert orders[None].index(old) < orders[None].index(new)  # as scored: the old text matches better
    assert orders[0.5][0] == new
    assert orders[0.5][1] == old  # the older version stays, right after
