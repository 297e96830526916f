"""A study file (TOML): what a collection runs, checked before any subject sees it.

```toml
[study]
id = "pilot-grid"                 # names the sessions: <id>-<subject>-p<k><a|b>
title = "Pilot: walking a windy grid"
collector = "TRB lab"             # who collects (every session's source.collector)
licence = "CC-BY-4.0"
pairs_per_subject = 2             # paired sessions per subject: each pair is two sessions, same start, two goals
revise_steps = [1, 3]             # steps (numbered from 1) offered for revision at the end; or "all"
seed = 7                          # the environment's randomness, with the subject id and the pair

[consent]
ref = "consent/2026/pilot-grid-v1"   # goes into every record
text = "..."                         # (a multi-line string) shown first; without an explicit yes nothing is recorded

[environment]
name = "grid"                     # a registered environment (environments.get_environment)

[[environment.tasks]]             # one per pair, in turn; the environment checks the keys
id = "walk-1"
stimulus = "open-7x7-breeze"
start = "A1"
goal = "D4"
paired_goal = "A4"
budget = 6

[[contexts]]                      # what Track 6 transfers across; a subject gets one
id = "ctx-pilot-en"
stimulus_set = "open-7x7-breeze"
subject_population = "adult volunteers"
language = "en"
```

:func:`load_study` returns a :class:`Study` or raises :class:`~corpus.errors.InvalidInput`
listing every problem as ``FILE:LINE: key: message``.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from corpus.errors import InvalidInput, Problem
from environments import get_environment
from environments.base import Environment, EnvironmentRefused
from toolkit.toml_lines import TomlLines as _Lines

__all__ = ["Study", "Context", "load_study", "parse_study"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$")
_REF = re.compile(r"^\S{1,200}$")
_LANG = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
MAX_PAIRS = 20


@dataclass(frozen=True)
class Context:
    id: str
    stimulus_set: str
    subject_population: str
    language: str

    def record(self) -> dict:
        return {"context_id": self.id, "stimulus_set": self.stimulus_set,
                "subject_population": self.subject_population, "language": self.language}


@dataclass(frozen=True)
class Study:
    path: str
    sha256: str  # of the file's bytes: a draft records it and refuses to resume under another study
    id: str
    title: str
    collector: str
    licence: str
    pairs_per_subject: int
    revise_steps: tuple[int, ...] | None  # step numbers from 1; None: every step
    seed: int
    consent_ref: str
    consent_text: str
    environment: Environment
    tasks: tuple[dict, ...]
    contexts: tuple[Context, ...]

    def task(self, pair: int) -> dict:
        return self.tasks[pair % len(self.tasks)]

    def context(self, context_id: str | None) -> Context:
        if context_id is None:
            return self.contexts[0]
        for c in self.contexts:
            if c.id == context_id:
                return c
        raise InvalidInput([], 0, f"study {self.id!r} has no context {context_id!r}; "
                                  f"its contexts: {', '.join(c.id for c in self.contexts)}")

    def revisable(self, step: int) -> bool:
        """Whether step ``step`` (numbered from 1) is offered for revision."""
        return self.revise_steps is None or step in self.revise_steps


def load_study(path: str | Path) -> Study:
    """Read and check the study file at ``path``."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InvalidInput([Problem(str(p), None, "", f"cannot read the study file: {e.strerror or e}")], 1,
                           "the study file cannot be read") from None
    return parse_study(data, str(p))


def parse_study(data: bytes, name: str = "<study>") -> Study:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput([Problem(name, None, "", f"not UTF-8 text ({e.reason} at byte {e.start})")], 1,
                           "the study file is not valid") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InvalidInput([Problem(name, int(m.group(1)) if m else None, "", f"not valid TOML: {e}")], 1,
                           "the study file is not valid TOML") from None
    lines = _Lines(text)
    problems: list[Problem] = []

    def bad(table: str, key: str | None, message: str) -> None:
        pointer = f"{table}.{key}" if key else table
        problems.append(Problem(name, lines.line(table, key), pointer, message))

    def table(key: str) -> dict:
        v = doc.get(key)
        if not isinstance(v, dict):
            bad(key, None, f"the [{key}] table is missing")
            return {}
        return v

    def string(t: dict, tname: str, key: str, *, pattern: re.Pattern | None = None, what: str = "text") -> str:
        v = t.get(key)
        if not isinstance(v, str) or not v.strip():
            bad(tname, key, f"expected {what}, got {v!r}" if key in t else f"missing (expected {what})")
            return ""
        if pattern is not None and not pattern.match(v):
            bad(tname, key, f"expected {what}, got {v!r}")
        return v

    study, consent, env_t = table("study"), table("consent"), table("environment")
    sid = string(study, "study", "id", pattern=_ID, what="an id (letters, digits, . _ : -; at most 64)")
    title = string(study, "study", "title")
    collector = string(study, "study", "collector")
    licence = string(study, "study", "licence", what="a licence (an SPDX id such as CC-BY-4.0)")
    pairs = study.get("pairs_per_subject", 1)
    if not isinstance(pairs, int) or isinstance(pairs, bool) or not 1 <= pairs <= MAX_PAIRS:
        bad("study", "pairs_per_subject", f"expected a whole number from 1 to {MAX_PAIRS}, got {pairs!r}")
        pairs = 1
    seed = study.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        bad("study", "seed", f"expected a whole number ≥ 0, got {seed!r}")
        seed = 0
    rev = study.get("revise_steps", "all")
    revise: tuple[int, ...] | None = None
    if rev != "all":
        if not isinstance(rev, list) or not rev or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
                                                          for x in rev):
            bad("study", "revise_steps", f'expected "all" or a list of step numbers from 1, got {rev!r}')
        else:
            revise = tuple(sorted(set(rev)))
    for key in sorted(set(study) - {"id", "title", "collector", "licence", "pairs_per_subject", "revise_steps",
                                    "seed"}):
        bad("study", key, "unknown key")
    ref = string(consent, "consent", "ref", pattern=_REF, what="a consent reference (no spaces)") if consent else ""
    consent_text = string(consent, "consent", "text", what="the consent text shown to the subject") if consent else ""

    env = None
    env_name = env_t.get("name")
    if env_t:
        try:
            env = get_environment(env_name) if isinstance(env_name, str) else None
            if env is None:
                bad("environment", "name", f"expected an environment name, got {env_name!r}")
        except EnvironmentRefused as e:
            bad("environment", "name", e.message)
    tasks = env_t.get("tasks") if env_t else None
    if env_t and (not isinstance(tasks, list) or not tasks):
        bad("environment", None, "expected at least one [[environment.tasks]] table")
        tasks = []
    seen = set()
    for i, task in enumerate(tasks or []):
        tname = f"environment.tasks[{i}]"
        if not isinstance(task, dict):
            bad(tname, None, "expected a table")
            continue
        tid = task.get("id")
        if not isinstance(tid, str) or not _ID.match(tid):
            bad(tname, "id", f"expected an id, got {tid!r}")
        elif tid in seen:
            bad(tname, "id", f"duplicate task id {tid!r}")
        seen.add(tid)
        if env is not None:
            found = env.check_task(task)
            for key, message in found:
                bad(tname, key, message)
            if not found and env.goals(task)[1] is None:
                bad(tname, "paired_goal", "missing: the paired session needs a second goal from the same start")

    contexts = []
    raw = doc.get("contexts")
    if not isinstance(raw, list) or not raw:
        problems.append(Problem(name, None, "contexts", "expected at least one [[contexts]] table"))
        raw = []
    ids = set()
    for i, c in enumerate(raw):
        cname = f"contexts[{i}]"
        if not isinstance(c, dict):
            bad(cname, None, "expected a table")
            continue
        cid = string(c, cname, "id", pattern=_ID, what="a context id")
        if cid in ids:
            bad(cname, "id", f"duplicate context id {cid!r}")
        ids.add(cid)
        lang = string(c, cname, "language", pattern=_LANG, what="a BCP 47 language tag such as en or fr-CA")
        if env is not None and lang and lang.split("-")[0] not in env.languages:
            bad(cname, "language", f"the {env.name} environment renders {', '.join(env.languages)}, not {lang!r}")
        ctx = Context(cid, string(c, cname, "stimulus_set"), string(c, cname, "subject_population"), lang)
        for key in sorted(set(c) - {"id", "stimulus_set", "subject_population", "language"}):
            bad(cname, key, "unknown key")
        contexts.append(ctx)
    for key in sorted(set(doc) - {"study", "consent", "environment", "contexts"}):
        problems.append(Problem(name, lines.line(key), key, "unknown table"))

    if problems:
        problems.sort(key=lambda p: p.line or 0)
        raise InvalidInput(problems, len(problems), f"{len(problems)} problem(s) in the study file; fix them and "
                                                    "run trb-collect check again")
    return Study(path=name, sha256=hashlib.sha256(data).hexdigest(), id=sid, title=title, collector=collector,
                 licence=licence, pairs_per_subject=pairs, revise_steps=revise, seed=seed, consent_ref=ref,
                 consent_text=consent_text.strip(), environment=env, tasks=tuple(tasks), contexts=tuple(contexts))
