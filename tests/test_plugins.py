"""One plug-in mechanism for everything that varies: tracks, adapters, runners, environments and importers are each
an entry-point group; the toolkit's own are listed once, in pyproject.toml, and loaded like a lab's; a registry
never imports its built-ins (no import circle between a registry and what it registers)."""

from __future__ import annotations

import ast
import tomllib

import pytest

from tests_paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
GROUPS = PYPROJECT["project"]["entry-points"]
#: entry-point group -> the registry module that reads it
REGISTRIES = {"trb.tracks": "trb/tracks/base.py", "trb.adapters": "trb/adapters/registry.py",
              "trb.runners": "trb/runners/base.py", "trb.environments": "environments/base.py",
              "trb.importers": "corpus/importers/registry.py"}


def _imported(path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_every_registry_is_an_entry_point_group_with_its_builtins_listed_in_pyproject():
    assert set(REGISTRIES) <= set(GROUPS)
    assert set(GROUPS["trb.tracks"]) == {"1", "2", "3", "4", "5", "6"}
    assert set(GROUPS["trb.runners"]) == {"local", "ray"} and set(GROUPS["trb.environments"]) == {"grid"}
    assert set(GROUPS["trb.adapters"]) == {"native", "proxy", "served"}
    assert set(GROUPS["trb.importers"]) == {"mcq", "inspect"}


@pytest.mark.parametrize("group", sorted(REGISTRIES))
def test_a_registry_never_imports_its_builtins(group):
    builtins = {v.partition(":")[0] for v in GROUPS[group].values()}
    imported = _imported(ROOT / REGISTRIES[group])
    assert not builtins & imported, f"{REGISTRIES[group]} imports its built-ins {sorted(builtins & imported)}"
    # and lists none of them in code: pyproject.toml is the one list
    text = (ROOT / REGISTRIES[group]).read_text(encoding="utf-8")
    assert not [v for v in GROUPS[group].values() if v in text]


def test_the_builtins_load_through_the_entry_points_as_built_in_with_no_problem():
    from corpus.importers.registry import available_importers
    from corpus.importers.registry import registry_problems as importer_problems
    from environments.base import environment_names, environment_problems
    from trb.adapters.registry import available_adapters, registry_problems
    from trb.runners.base import registered_runners, runner_problems
    from trb.tracks.base import registered_tracks, track_problems

    assert set(GROUPS["trb.tracks"]) <= set(registered_tracks()) and track_problems() == ()
    assert set(registered_runners()) >= {"local", "ray"} and runner_problems() == ()
    assert "grid" in environment_names() and environment_problems() == ()
    adapters = available_adapters()
    assert all(adapters[n].source == "built-in" for n in GROUPS["trb.adapters"]) and registry_problems() == ()
    importers = available_importers()
    assert all(importers[n].source == "built-in" for n in GROUPS["trb.importers"]) and importer_problems() == ()


def test_a_broken_track_plugin_is_a_problem_not_a_crash(monkeypatch):
    from importlib import metadata

    import trb.tracks.base as base

    real = metadata.entry_points

    def with_a_broken_one(**kw):
        eps = list(real(**kw))
        if kw.get("group") == base.ENTRY_POINT_GROUP:
            eps.append(metadata.EntryPoint("98", "no_such_module_here:TRACK", base.ENTRY_POINT_GROUP))
        return eps

    monkeypatch.setattr(metadata, "entry_points", with_a_broken_one)
    monkeypatch.setattr(base, "_PLUGINS", {"loaded": False, "problems": ()})
    tracks = base.registered_tracks()
    assert set(GROUPS["trb.tracks"]) <= set(tracks) and "98" not in tracks
    (problem,) = base.track_problems()
    assert problem.startswith("track '98' (no_such_module_here:TRACK, from installed) cannot be loaded: "
                              "ModuleNotFoundError")
