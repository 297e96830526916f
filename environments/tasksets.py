"""Rollout task sets: the tasks closed-loop tracks (4 and 5) put a model through, versioned and content-hashed.

Tasks are part of what is evaluated, so a task set is a published, checked file (TOML), named in
every run row by its **content SHA**: the sha256 of the canonical JSON of what it defines (name,
version, environment, language, seeds, every task's fields; not its comments or layout), so two
files that define the same tasks have the same SHA and any change to a task changes it.

```toml
[taskset]
name = "grid-rollouts"
version = "1"
environment = "grid"            # a registered environment (environments.get_environment)
language = "en"
# seed_version = "1"            # optional: seed the episodes as this version did (default: version)

[seeds]                         # episodes per task and split; the eval seeds are held out
eval = 4
train = 2
transfer = 4                    # episodes per transfer task (only with transfer tasks: see below)

[[viability]]                   # Track 4: reach the task's goal within the budget
id = "v01"
stimulus = "open-7x7-breeze"    # the rest is the environment's task table, checked by it
start = "A1"
goal = "D4"
budget = 12

[[navigation]]                  # Track 5: steering points at `target`, a region other than the goal shown
id = "n01"
stimulus = "open-7x7-breeze"
start = "A1"
goal = "D4"
target = ["F2"]
budget = 12

[[loop]]                        # Track 5's CG-2: two routes of the same moves to the same cell
id = "l01"
stimulus = "open-7x7-breeze"
start = "B2"
goal = "E5"
alt_goal = "B6"                 # the goal the steering loop passes through (g1 -> g2 -> g1)
route_a = ["right", "up"]
route_b = ["up", "right"]
budget = 10
drift = 0.0                     # loops must be deterministic
```

**Transfer tasks (Track 6).** A task with ``context = "<transfer context id>"`` is a *transfer task*: it
is rolled on the transfer split only (``trb run --split transfer``), its rows carry that context id
(so Track 6 groups them with the other tracks' items of the same context), and its episodes speak
the context's language (``language = ".."`` on the task, by default the context id's last
dot-separated part, e.g. ``it`` for ``xfer-lab-b.maze-9x9-gusty.careful.it``; the environment must
have texts in it). Its stimulus is one the environment hosts (a held-out stimulus set of the
context). A task without a context is in-distribution: rolled on eval and train, never on transfer.
A set with transfer tasks needs ``transfer = N`` (N ≥ 1) in ``[seeds]``, and ``transfer`` seeds need
a transfer task. On a transfer-split run the engine keeps the tasks whose context is one of the
*release's* transfer contexts (:meth:`TaskSet.for_release`): a release context with no task is
named in the run's record (``transfer.without_tasks``) and in the report, and a rollout track with no
task on any of them is an error, not an empty run.

```toml
[[viability]]
id = "xb-v01"
context = "xfer-lab-b.maze-9x9-gusty.careful.it"   # a transfer context id of the release
stimulus = "maze-9x9-gusty"
start = "B8"
goal = "H2"
budget = 14
```

**Seeds and the held-out rule.** Episode ``k`` of a task in split ``s`` is seeded by the string
``trb-rollout:<name>:<version>:<s>:<task id>:<k>`` (:class:`RolloutSeed`; ``<version>`` is
``seed_version`` where the set gives one): the environment's
randomness from its sha256, the policy's draws from a generator seeded by the same string. The eval
seeds are held out: nothing in the toolkit trains on rollouts, the simulated corpus seeds its
sessions by ``"<int>:<...>"`` strings (never this namespace), and the train seeds (for a lab that
fits on rollouts) are a disjoint namespace, so no training sees an eval episode. Transfer episodes
are seeded in their own namespace (split ``transfer``) and only transfer tasks have them.

:func:`load_taskset` reads and checks a file (every problem as ``FILE:LINE: key: message``);
:func:`default_taskset` is the built-in grid task set.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from environments.base import Environment, EnvironmentRefused, get_environment
from toolkit.errors import ExitCode, ToolkitError
from toolkit.toml_lines import TomlLines

__all__ = ["TaskSet", "RolloutTask", "RolloutSeed", "TaskSetInvalid", "load_taskset", "parse_taskset",
           "default_taskset", "DEFAULT_TASKSET", "KINDS", "SPLITS", "taskset_sha"]

KINDS = ("viability", "navigation", "loop")
SPLITS = ("eval", "train", "transfer")
DEFAULT_TASKSET = "grid-rollouts-v2.toml"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,63}$")
_META = {"viability": {"id"}, "navigation": {"id", "target"}, "loop": {"id", "alt_goal", "route_a", "route_b"}}
#: What any task may add to the environment's table: a transfer task's context and episode language.
_TRANSFER_KEYS = {"context", "language"}
MAX_SEEDS = 1000


class TaskSetInvalid(ToolkitError):
    """A task set file that cannot be used: every problem, located (exit 1: invalid input)."""

    exit_code = ExitCode.INVALID

    def __init__(self, problems: list[str], name: str):
        super().__init__(f"{name}: the task set is not valid ({len(problems)} problem(s))")
        self.problems = problems

    def lines(self) -> list[str]:
        return [self.message, *self.problems]


@dataclass(frozen=True)
class RolloutSeed:
    """Episode ``k`` of a task in a split: its seed string, and the integer the environment is seeded with."""

    split: str
    k: int
    text: str

    @property
    def value(self) -> int:
        return int.from_bytes(hashlib.sha256(self.text.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class RolloutTask:
    """One task: its kind, the environment's task table, and what the kind adds (target, loop routes)."""

    id: str
    kind: str
    table: dict  # the environment's task table (stimulus, start, goal, budget, ...)
    target: tuple[str, ...] | None = None  # navigation: the region steering points at
    alt_goal: str | None = None  # loop: g2
    routes: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # loop: route a, route b
    context: str | None = None  # a transfer task: the transfer context it is rolled in (None: in-distribution)
    language: str | None = None  # a transfer task: its episodes' language (the context's)

    @property
    def goal(self) -> str:
        return self.table["goal"]


@dataclass(frozen=True)
class TaskSet:
    name: str
    version: str
    environment: str
    language: str
    seeds: dict[str, int]
    tasks: tuple[RolloutTask, ...]
    sha: str
    source: str = field(default="", compare=False)
    #: For a task set derived by :meth:`with_seeds`: the SHA of the one it was derived from.
    derived_from: str | None = None
    #: Set by :meth:`for_release`: the release's transfer contexts (only their transfer tasks are rolled); None:
    #: every transfer task. Not content: the same tasks, the same SHA.
    release_contexts: tuple[str, ...] | None = field(default=None, compare=False)
    #: ``[taskset] seed_version``: the version the episodes are seeded as (default: ``version``); v2 keeps v1's, so
    #: the in-distribution tasks it keeps unchanged have the same episodes (a v1 and a v2 eval run are comparable).
    seed_version: str | None = None

    def of_kind(self, kind: str) -> list[RolloutTask]:
        return [t for t in self.tasks if t.kind == kind]

    def seeds_for(self, task: RolloutTask, split: str) -> list[RolloutSeed]:
        """The seeds of ``task``'s episodes in ``split`` (none for a split the set has no seeds for). A transfer task
        has seeds on the transfer split only (and only for a context of the release, after :meth:`for_release`);
        an in-distribution task has none there."""
        if (task.context is not None) != (split == "transfer"):
            return []
        if task.context is not None and self.release_contexts is not None \
                and task.context not in self.release_contexts:
            return []
        version = self.seed_version or self.version
        return [RolloutSeed(split, k, f"trb-rollout:{self.name}:{version}:{split}:{task.id}:{k}")
                for k in range(self.seeds.get(split, 0))]

    def contexts(self) -> list[str]:
        """The transfer contexts the set has tasks for, sorted."""
        return sorted({t.context for t in self.tasks if t.context is not None})

    def for_release(self, contexts) -> TaskSet:
        """The same task set, rolling on the transfer split only the tasks of ``contexts`` (the release's transfer
        context ids). Its SHA is the set's (the tasks are the same); :meth:`describe` records the contexts."""
        return replace(self, release_contexts=tuple(sorted(str(c) for c in contexts)))

    def transfer_coverage(self) -> dict | None:
        """For a set restricted by :meth:`for_release`: the release's contexts, the tasks of each by kind, and the
        contexts without a task (named, never silently skipped)."""
        if self.release_contexts is None:
            return None
        tasks = {c: {k: sum(1 for t in self.of_kind(k) if t.context == c) for k in KINDS}
                 for c in self.release_contexts}
        return {"release_contexts": list(self.release_contexts), "tasks": tasks,
                "without_tasks": [c for c, n in tasks.items() if not sum(n.values())],
                "not_in_release": [c for c in self.contexts() if c not in self.release_contexts]}

    def env(self) -> Environment:
        return get_environment(self.environment)

    def with_seeds(self, **seeds: int) -> TaskSet:
        """The same tasks with other episode counts per split (e.g. ``eval=1`` for a quick smoke run): a task set of
        its own, with its own content SHA, that records the SHA it was derived from. The seeds of the episodes it
        keeps are the same strings (episode k of a task in a split does not depend on how many there are)."""
        bad = {k: v for k, v in seeds.items() if k not in SPLITS or not isinstance(v, int) or not 0 <= v <= MAX_SEEDS}
        if bad or not {**self.seeds, **seeds}.get("eval"):
            raise TaskSetInvalid([f"{self.source}: seeds {bad or seeds}: expected {', '.join(SPLITS)} = 0..{MAX_SEEDS}"
                                  ", eval at least 1"], self.source)
        new = {**self.seeds, **seeds}
        content = {"name": self.name, "version": self.version, "environment": self.environment,
                   "language": self.language, "seeds": new, "tasks": [_content(t) for t in self.tasks],
                   **({"seed_version": self.seed_version} if self.seed_version else {})}
        return TaskSet(self.name, self.version, self.environment, self.language, new, self.tasks,
                       taskset_sha(content), self.source, derived_from=self.sha, release_contexts=self.release_contexts,
                       seed_version=self.seed_version)

    def describe(self) -> dict:
        """What a run row records of it."""
        return {"name": self.name, "version": self.version, "sha": self.sha, "environment": self.environment,
                "language": self.language, "seeds": dict(self.seeds), "source": self.source,
                "derived_from": self.derived_from, "tasks": {k: len(self.of_kind(k)) for k in KINDS},
                **({"transfer_tasks": {c: sum(1 for t in self.tasks if t.context == c) for c in self.contexts()}}
                   if self.contexts() else {}),
                **({"transfer": self.transfer_coverage()} if self.release_contexts is not None else {})}


def taskset_sha(content: dict) -> str:
    """The content SHA: sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of ``content``."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_taskset(path: str | Path) -> TaskSet:
    """Read and check the task set file at ``path``. Raises :class:`TaskSetInvalid`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TaskSetInvalid([f"{p}: cannot read the task set file: {e.strerror or e}"], str(p)) from None
    return parse_taskset(data, str(p))


def default_taskset(file: str | None = None) -> TaskSet:
    """The built-in grid task set (shipped in the package); ``file`` names an earlier built-in version (e.g.
    ``grid-rollouts-v1.toml``, which runs made before v2 record)."""
    file = file or DEFAULT_TASKSET
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]*\.toml", file):
        raise TaskSetInvalid([f"{file}: not a built-in task set file name"], file)
    ref = resources.files("environments") / "tasksets" / file
    if not ref.is_file():
        raise TaskSetInvalid([f"{file}: no such built-in task set"], file)
    return parse_taskset(ref.read_bytes(), f"{file} (built in)")


def parse_taskset(data: bytes, name: str = "<taskset>") -> TaskSet:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskSetInvalid([f"{name}: not UTF-8 text ({e.reason} at byte {e.start})"], name) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TaskSetInvalid([f"{name}:{getattr(e, 'lineno', '?')}: not valid TOML: {e}"], name) from None
    lines = TomlLines(text)
    problems: list[str] = []

    def bad(table: str, key: str | None, message: str) -> None:
        line = lines.line(table, key)
        where = f"{name}:{line}" if line is not None else name
        problems.append(f"{where}: {table}{'.' + key if key else ''}: {message}")

    head = doc.get("taskset")
    if not isinstance(head, dict):
        bad("taskset", None, "the [taskset] table is missing")
        head = {}
    meta = {}
    for key, what in (("name", "a name"), ("version", "a version string"), ("environment", "an environment name"),
                      ("language", "a language code")):
        v = head.get(key)
        if not isinstance(v, str) or not v.strip():
            if head or key == "name":
                bad("taskset", key, f"expected {what}, got {v!r}" if key in head else f"missing (expected {what})")
        meta[key] = v
    if isinstance(meta["name"], str) and not _ID.match(meta["name"]):
        bad("taskset", "name", f"expected an id (letters, digits, . _ -), got {meta['name']!r}")
    seed_version = head.get("seed_version")
    if seed_version is not None and (not isinstance(seed_version, str) or not seed_version.strip()):
        bad("taskset", "seed_version", f"expected a version string (the version the episodes are seeded as), "
                                       f"got {seed_version!r}")
    unknown = sorted(set(head) - {"name", "version", "environment", "language", "seed_version"})
    for k in unknown:
        bad("taskset", k, "unknown key")
    env = None
    if isinstance(meta["environment"], str):
        try:
            env = get_environment(meta["environment"])
        except EnvironmentRefused as e:
            bad("taskset", "environment", e.message)
    if env is not None and isinstance(meta["language"], str) and meta["language"] not in env.languages:
        bad("taskset", "language", f"the {env.name} environment has no texts in {meta['language']!r} "
                                   f"(it has {', '.join(env.languages)})")
    seeds_t = doc.get("seeds")
    seeds: dict[str, int] = {}
    if not isinstance(seeds_t, dict):
        bad("seeds", None, "the [seeds] table is missing (episodes per task, per split: eval = N, train = M)")
    else:
        for k, v in seeds_t.items():
            if k not in SPLITS:
                bad("seeds", k, f"unknown split (expected {', '.join(SPLITS)})")
            elif not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_SEEDS:
                bad("seeds", k, f"expected a whole number of episodes from 0 to {MAX_SEEDS}, got {v!r}")
            else:
                seeds[k] = v
        if not seeds.get("eval") and "eval" not in {k for k in seeds_t if k not in seeds}:
            bad("seeds", "eval", "missing or 0: the held-out eval split needs at least one episode per task")
    for k in sorted(set(doc) - {"taskset", "seeds", *KINDS}):
        bad(k, None, f"unknown table (expected taskset, seeds, {', '.join(KINDS)})")
    tasks: list[RolloutTask] = []
    seen: dict[str, str] = {}
    for kind in KINDS:
        entries = doc.get(kind, [])
        if not isinstance(entries, list):
            bad(kind, None, f"expected [[{kind}]] tables")
            continue
        for i, entry in enumerate(entries):
            tname = f"{kind}[{i}]"
            if not isinstance(entry, dict):
                bad(tname, None, "expected a table")
                continue
            tid = entry.get("id")
            if not isinstance(tid, str) or not _ID.match(tid):
                bad(tname, "id", f"expected an id (letters, digits, . _ -), got {tid!r}")
                continue
            if tid in seen:
                bad(tname, "id", f"{tid!r} is already the id of a {seen[tid]} task")
                continue
            seen[tid] = kind
            task = _task(kind, tid, entry, env, lambda key, msg, t=tname: bad(t, key, msg))
            if task is not None:
                tasks.append(task)
    if not problems and not tasks:
        bad("taskset", None, "no task: give at least one [[viability]], [[navigation]] or [[loop]] table")
    if not problems and isinstance(seeds_t, dict):
        has_transfer = any(t.context is not None for t in tasks)
        if has_transfer and not seeds.get("transfer"):
            bad("seeds", "transfer" if "transfer" in seeds_t else None,
                "missing or 0: the set has transfer tasks (with a context), which need transfer = N episodes (N ≥ 1)")
        elif seeds.get("transfer") and not has_transfer:
            bad("seeds", "transfer", "no task declares a context: transfer seeds need transfer tasks "
                                     "(context = \"<transfer context id>\")")
        if has_transfer and not any(t.context is None for t in tasks):
            bad("taskset", None, "every task is a transfer task: the eval split needs in-distribution tasks")
    if problems:
        raise TaskSetInvalid(problems, name)
    content = {**meta, "seeds": seeds, "tasks": [_content(t) for t in tasks],
               **({"seed_version": seed_version} if seed_version else {})}
    return TaskSet(meta["name"], meta["version"], meta["environment"], meta["language"], seeds, tuple(tasks),
                   taskset_sha(content), name, seed_version=seed_version)


def _content(task: RolloutTask) -> dict:
    out = {"id": task.id, "kind": task.kind, "table": task.table, "target": list(task.target or []),
           "alt_goal": task.alt_goal, "routes": [list(r) for r in task.routes or ()]}
    if task.context is not None:  # only then: an in-distribution task's content (and v1's SHA) is unchanged
        out.update(context=task.context, language=task.language)
    return out


def _transfer(entry: dict, env: Environment | None, bad) -> tuple[bool, str | None, str | None]:
    """A task's ``context`` and ``language`` (a transfer task's), checked: (ok, context, language)."""
    context, language = entry.get("context"), entry.get("language")
    if context is None:
        if language is not None:
            bad("language", "only a transfer task (with a context) sets its own language")
            return False, None, None
        return True, None, None
    if not isinstance(context, str) or not _ID.match(context):
        bad("context", f"expected a transfer context id (letters, digits, . _ -), got {context!r}")
        return False, None, None
    if language is None:
        language = context.rsplit(".", 1)[-1]
        if env is not None and language not in env.languages:
            bad("language", f"missing, and the context id's last part {language!r} is not a language of the "
                            f"{env.name} environment ({', '.join(env.languages)}): set language = \"..\"")
            return False, None, None
    elif not isinstance(language, str) or (env is not None and language not in env.languages):
        bad("language", f"expected a language of the {getattr(env, 'name', '?')} environment "
                        f"({', '.join(getattr(env, 'languages', ()))}), got {language!r}")
        return False, None, None
    return True, context, language


def _task(kind: str, tid: str, entry: dict, env: Environment | None, bad) -> RolloutTask | None:
    ok, context, language = _transfer(entry, env, bad)
    entry = {k: v for k, v in entry.items() if k not in _TRANSFER_KEYS}
    task = _task_table(kind, tid, entry, env, bad) if ok else None
    return replace(task, context=context, language=language) if task is not None else None


def _task_table(kind: str, tid: str, entry: dict, env: Environment | None, bad) -> RolloutTask | None:
    table = {k: v for k, v in entry.items() if k not in _META[kind] or k == "id"}
    ok = True
    if env is not None:
        for key, message in env.check_task(table):
            bad(key, message)
            ok = False
        if "paired_goal" in table:
            bad("paired_goal", "a rollout task has one goal (paired goals are for trb-collect studies)")
            ok = False
    if not ok or env is None:
        return None
    if kind == "viability":
        return RolloutTask(tid, kind, table)
    if kind == "navigation":
        target = entry.get("target")
        cells = [target] if isinstance(target, str) else target
        if not isinstance(cells, list) or not cells or not all(isinstance(c, str) for c in cells):
            bad("target", f"expected a list of cells (the target region), got {target!r}")
            return None
        why = env.check_region(table, cells)
        if why is None and table.get("goal") in cells:
            why = "the target must differ from the goal the observation shows (steering points elsewhere)"
        if why is not None:
            bad("target", why)
            return None
        return RolloutTask(tid, kind, table, target=tuple(cells))
    # loop
    alt = entry.get("alt_goal")
    why = env.check_region(table, [alt]) if isinstance(alt, str) else f"expected a cell, got {alt!r}"
    if why is None and alt == table.get("goal"):
        why = "the loop's second goal must differ from the goal"
    if why is not None:
        bad("alt_goal", why)
        return None
    routes = []
    for key in ("route_a", "route_b"):
        r = entry.get(key)
        if not isinstance(r, list) or not r or not all(isinstance(a, str) for a in r):
            bad(key, f"expected a non-empty list of actions, got {r!r}")
            return None
        routes.append(tuple(r))
    if routes[0] == routes[1]:
        bad("route_b", "the two routes must differ (the same route is no loop)")
        return None
    if len(routes[0]) != len(routes[1]):
        bad("route_b", "the two routes must have the same length (the end state includes the step count)")
        return None
    if table.get("drift", None) not in (0, 0.0):
        bad("drift", "a loop task must set drift = 0.0 (the routes must be deterministic)")
        return None
    if len(routes[0]) >= table["budget"]:
        bad("budget", f"must exceed the routes' length ({len(routes[0])}): the loop ends before the budget")
        return None
    why = _check_routes(env, table, routes)
    if why is not None:
        bad(why[0], why[1])
        return None
    return RolloutTask(tid, kind, table, alt_goal=alt, routes=(routes[0], routes[1]))


def _check_routes(env: Environment, table: dict, routes: list[tuple[str, ...]]) -> tuple[str, str] | None:
    """Walk both routes (drift is 0): every action must be open and the two must end on the same cell."""
    ends = []
    for key, route in zip(("route_a", "route_b"), routes):
        ep = env.start(table, goal=table["goal"], seed=0, language=env.languages[0])
        cells = [ep.observation_data.get("cell")]
        for a in route:
            if ep.action_space is not None and a not in ep.action_space:
                return key, f"{a!r} is not an action of the environment ({', '.join(ep.action_space)})"
            if ep.done:
                return key, "the route ends the episode before its last action"
            ep.step(a)
            cells.append(ep.observation_data.get("cell"))
            if cells[-1] == cells[-2] and a != "wait":
                return key, f"{a!r} at step {len(cells) - 1} is blocked (a loop needs every move to move)"
        if ep.done:
            return key, "the route ends on the goal (or spends the budget): the end state must still be open"
        ends.append(cells[-1])
    if ends[0] != ends[1]:
        return "route_b", f"the routes end on different cells ({ends[0]} and {ends[1]}): not the same state"
    return None

