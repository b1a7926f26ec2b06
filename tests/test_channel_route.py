"""The fitted channel route (``dualmem.read.channel_route``): it loads, it decides, it plugs in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from research.cv import CVConfig, routed_channels

from dualmem import Memory
from dualmem.config import Profile, ReadProfile
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError
from dualmem.read.channel_route import ROUTE_FEATURES, FittedRoute, fitted_route, fitted_sizes, route_features
from test_channels import _observations

NO_TIME = "What kind of pottery does Mira make?"
WINDOW = "What did we get up to last weekend?"


def test_the_packaged_route_loads_and_knows_the_channels() -> None:
    route = fitted_route()
    assert route.features == ROUTE_FEATURES
    assert set(route.weights) == {"temporal", "entity"}
    assert all(0.0 <= route.thresholds[c] <= 1.01 for c in route.weights)
    again = FittedRoute.from_json(route.to_json())
    assert again == route


def test_a_bad_artefact_is_a_config_error() -> None:
    good = fitted_route().to_json()
    with pytest.raises(ConfigError):
        FittedRoute.from_json({"features": ["nope"], "channels": {}})
    with pytest.raises(ConfigError):
        FittedRoute.from_json({"features": good["features"], "channels": {"temporal": {"weights": [1.0]}}})
    with pytest.raises(ConfigError):
        FittedRoute.from_json({"channels": {}})


def test_route_features_read_time_and_entities() -> None:
    f = dict(zip(ROUTE_FEATURES, route_features(WINDOW), strict=True))
    assert f["window"] == 1.0
    assert f["time_words"] == 1.0
    g = dict(zip(ROUTE_FEATURES, route_features(NO_TIME), strict=True))
    assert g["window"] == 0.0
    assert g["time_words"] == 0.0
    assert g["when"] == 0.0


def test_the_fitted_route_turns_the_temporal_channel_off_without_time_language() -> None:
    profile = ReadProfile(channels=("temporal", "entity"), channel_budget=40)
    need, sizes = fitted_sizes(WINDOW, profile)
    assert "temporal" in sizes
    assert need["temporal"] > fitted_route().need(NO_TIME, ["temporal"])["temporal"]
    need, sizes = fitted_sizes(NO_TIME, profile)
    assert "temporal" not in sizes
    assert sum(sizes.values()) in (0, 40)  # the channels that run share the whole budget


def test_the_fitted_route_turns_the_entity_channel_off_without_an_entity() -> None:
    profile = ReadProfile(channels=("entity",), channel_budget=40)
    _, sizes = fitted_sizes("What is my name?", profile)
    assert sizes == {}
    _, sizes = fitted_sizes("What did Jon say about the Porto trip with Callum?", profile)
    assert sizes == {"entity": 40}
    _, sizes = fitted_sizes("how is it going", profile)
    assert sizes == {}


def test_a_channel_the_route_does_not_know_is_routed_by_the_builtin_need() -> None:
    route = fitted_route()
    only_temporal = FittedRoute(
        route.features,
        {"temporal": route.weights["temporal"]},
        {"temporal": route.intercepts["temporal"]},
        {"temporal": route.thresholds["temporal"]},
    )
    profile = ReadProfile(channels=("temporal", "entity"), channel_budget=40, theta_act=0.5)
    need, sizes = fitted_sizes(NO_TIME, profile, {"entity": 0.9}, only_temporal)
    assert sizes == {"entity": 40}
    assert need["entity"] == 0.9
    _, sizes = fitted_sizes(NO_TIME, profile, {"entity": 0.2}, only_temporal)
    assert sizes == {}


def test_the_random_route_differs_from_the_fitted_route() -> None:
    questions = [
        WINDOW,
        NO_TIME,
        "When did Callum visit Porto?",
        "What did Jon fix?",
        "Which trip did Callum love, and when was it?",
        "How many pottery classes did Mira take before June?",
    ]
    channels = (("temporal", 20), ("entity", 20))
    fitted = [routed_channels(CVConfig(Path("."), channels=channels, route="fitted"), q) for q in questions]
    rnd = [routed_channels(CVConfig(Path("."), channels=channels, route="random"), q) for q in questions]
    assert fitted != rnd
    assert any(dict(f).get("temporal", 0) == 0 for f in fitted)


def test_a_route_artefact_file_routes_the_research_pools(tmp_path: Path) -> None:
    route = fitted_route().to_json()
    channels = route["channels"]
    assert isinstance(channels, dict)
    for spec in channels.values():
        spec["threshold"] = 1.01  # never runs
    art = tmp_path / "route.json"
    art.write_text(json.dumps(route), encoding="utf-8")
    cfg = CVConfig(Path("."), channels=(("temporal", 20), ("entity", 20)), route="fitted", route_artefact=art)
    assert routed_channels(cfg, WINDOW) == ()


def _search(tmp_path: Path, route: str, query: str):  # type: ignore[no-untyped-def]
    from dualmem.control.builtin import BuiltinController
    from dualmem.plane import SQLiteStore

    profile = Profile.builtin().with_(
        read__channels=("temporal", "entity"),
        read__channel_budget=10,
        read__pool=1,
        read__channel_route=route,
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore.open(tmp_path / "r.db")
    with Memory(store, HashingEmbedder(64), BuiltinController(), profile=profile) as mem:
        mem.add_many(_observations(), user="u")
        found = mem.search(query, user="u", k=10)
        return found.trace, [e.node.turn_id for e in found.evidence]


def test_the_read_path_runs_the_fitted_route(tmp_path: Path) -> None:
    trace, turns = _search(tmp_path / "a", "fitted", WINDOW)
    assert "temporal" in trace.channels
    assert {"D12", "D13"} <= set(turns)
    trace, _ = _search(tmp_path / "b", "fitted", NO_TIME)
    assert "temporal" not in trace.channels


def test_the_fitted_route_turns_off_what_the_builtin_route_runs(tmp_path: Path) -> None:
    trace, _ = _search(tmp_path / "a", "builtin", "What is my name?")
    assert "entity" in trace.channels  # System One's entity need never falls below theta_act
    trace, _ = _search(tmp_path / "b", "fitted", "What is my name?")
    assert trace.channels == {}


def test_read_channel_route_is_checked() -> None:
    with pytest.raises(ConfigError):
        Profile.builtin().with_(read__channel_route="oracle")


def test_a_channel_paid_when_it_found_gold_the_indexes_ranked_low() -> None:
    import numpy as np
    from research.route_fit import fit_logistic, found_labels

    from dualmem.read.pool import FEATURES

    absent = 10.0 / (10.0 + 200)
    f = np.full((3, len(FEATURES)), absent)
    for col in ("vec_rank", "lex_rank", "lex_q_rank", "time_rank", "entity_rank"):
        f[:, FEATURES.index(col)] = absent
    f[0, FEATURES.index("vec_rank")] = 10.0 / 11.0  # gold the vector index ranks first
    f[0, FEATURES.index("entity_rank")] = 10.0 / 11.0
    f[1, FEATURES.index("vec_rank")] = 10.0 / 40.0  # gold the vector index ranks 30th
    f[1, FEATURES.index("time_rank")] = 10.0 / 11.0
    labels = np.array([1.0, 1.0, 0.0])
    found = found_labels(f, labels)
    assert found["temporal"]
    assert not any(v for c, v in found.items() if c != "temporal")
    labels[1] = 0.0
    assert not any(found_labels(f, labels).values())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(float)
    w, _ = fit_logistic(x, y)
    assert w[0] > 1.0
    assert abs(w[1]) < 0.5


def test_cutting_a_pool_keeps_what_a_list_ranks_within_its_depth() -> None:
    import numpy as np
    from research.pools import QueryPool
    from research.route_budget import cut

    from dualmem.read.pool import FEATURES

    absent = 10.0 / (10.0 + 200)
    f = np.full((4, len(FEATURES)), absent)
    f[:, FEATURES.index("ctx_lex")] = 0.0
    f[0, FEATURES.index("vec_rank")] = 10.0 / 10.0  # vector rank 0
    f[1, FEATURES.index("vec_rank")] = 10.0 / 40.0  # vector rank 30
    f[2, FEATURES.index("ctx_lex")] = 3.0  # the context list's best
    f[3, FEATURES.index("vec_rank")] = 10.0 / 10.0
    pool = QueryPool(
        conversation="c", index=0, category=1, evidence=("b",), turn_ids=("a", "b", "c", "d"), features=f,
        labels=np.array([0.0, 1.0, 0.0, 0.0]), neighbour_only=np.array([False, False, False, True]),
        baselines={}, pool_ms=0.0,
    )  # fmt: skip
    kept = cut(pool, (25, 25, 25, 25))
    assert kept.turn_ids == ("a", "c")  # rank 30 is beyond 25; a neighbour row never stays
    deep = cut(pool, (50, 0, 0, 0))
    assert deep.turn_ids == ("a", "b")
    assert deep.features[:, FEATURES.index("ctx_lex")].max() == 0.0


def test_the_research_read_path_systems_route_as_named() -> None:
    from research.loco import _search_profile

    from dualmem.config import READ_CHANNELS

    assert _search_profile("dualmem channels").read.channel_route == "fitted"
    assert _search_profile("random-route").read.channel_route == "builtin"  # the random answers route
    assert _search_profile("dualmem builtin-route").read.channels == READ_CHANNELS
