"""One subject's run of a study, independent of any screen: consent, paired sessions, revisions, records.

The app (:mod:`collect.app`) drives a :class:`Collection`; tests drive it directly. Nothing is
written before the subject says yes to the consent text. From then on every step is saved to a
**draft** beside the corpus (``<corpus>/.trb-collect/drafts/<id>.json``, replaced atomically), so
a session closed or crashed half-way loses nothing and is never ingested half: the draft can be
resumed (the environment is replayed from the recorded actions: episodes are deterministic) or
discarded (``trb-collect drafts``). :meth:`Collection.finish` turns the whole run into records
and ingests them all or none; the draft goes only once the ingest has committed.

What a run produces (schema v1, source kind ``human_session``, the study's consent reference in
every session):

* two sessions per pair, same start and seed, the pair's two goals; every step with the
  observation, the subject's r_t (goal, planned_next, caused_by_self from the second step on,
  confidence), the action, the action space and the outcome as the environment renders it;
* ``same_session_revision`` counterfactuals: at the end, for the study's chosen steps, the
  subject states a revised r' and the action they would then take; Φ(r') is that choice
  (``n`` = 1), authored by the subject. Raise ``n`` in Label Studio:
  ``trb-annotate push --kind continuation --where "origin = 'same_session_revision' AND phi_n < 5"``;
  a release pools the annotators' choices with the subject's (:data:`corpus.release.POOLED_PHI_SQL`);
* ``paired_session`` counterfactuals at the first step of each session of a pair (the same
  start): r' is the partner session's r_0 and Φ(r') the partner's first action (``n`` = 1);
* ``attribution`` items from the environment's ground truth: every step but the last whose
  change had exactly one cause, the subject's own action (``self``) or a change from outside
  (``exogenous``).

Every free-text field is scanned for personal data (:mod:`collect.personal`: the kinds of
:mod:`corpus.pii`, and people's names and place names introduced as such) when it is entered; the
answers of a step are refused with :class:`AnswersRefused` listing **every** problem at once
(:class:`AnswerProblem`: the field, and what to do, in the subject's words), so nothing personal is
ever saved. A subject id is checked (:func:`collect.personal.check_subject_id`) before anything is
written.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from collect.personal import KIND_WORDS, check_subject_id, personal_data
from collect.study import Study, load_study
from corpus.errors import UsageError
from corpus.ingest import IngestReport, ingest_records
from corpus.store import Corpus
from schemas.models import SCHEMA_VERSION
from toolkit.locking import LockWait

__all__ = ["Collection", "RInput", "AnswerProblem", "AnswersRefused", "PersonalData", "DraftInfo", "list_drafts",
           "discard_draft", "DRAFTS", "new_subject_id", "check_subject_id"]

#: Where drafts live, under the corpus directory.
DRAFTS = Path(".trb-collect") / "drafts"


@dataclass(frozen=True)
class AnswerProblem:
    """One problem with a step's answers: ``field`` (``goal``, ``planned``, ``cause``, ``confidence``, ``action``,
    or ``answers`` for the whole form) and ``message``, what to do, in the subject's words."""

    field: str
    message: str
    personal: bool = False  # the answer holds personal data


class AnswersRefused(UsageError):
    """The answers of a step (or a revision) were refused, nothing saved: ``problems`` lists every one at once."""

    def __init__(self, problems: list[AnswerProblem]):
        self.problems = tuple(problems)
        super().__init__("\n".join(p.message for p in self.problems))


class PersonalData(AnswersRefused):
    """Answers refused because at least one holds personal data (an e-mail, a phone number, a name, ...)."""


class DraftError(UsageError):
    """A draft that cannot be resumed (missing, or made under another version of the study file)."""


def new_subject_id() -> str:
    """A fresh pseudonymous subject id: ``subj-`` and 8 random hex digits (never a name)."""
    return f"subj-{secrets.token_hex(4)}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: How the subject's app names each field in a message.
FIELD_WORDS = {"goal": "What you are trying to do", "planned": "What you will do next",
               "cause": "Whether the last change was your doing", "confidence": "How sure you are",
               "action": "Your move"}


def _text_problem(field_name: str, text: str | None, empty: str) -> AnswerProblem | None:
    text = (text or "").strip()
    if not text:
        return AnswerProblem(field_name, f"{FIELD_WORDS[field_name]}: {empty}")
    kinds = personal_data(text)
    if kinds:
        what = " and ".join(dict.fromkeys(KIND_WORDS[k] for k in kinds))
        return AnswerProblem(field_name, f"{FIELD_WORDS[field_name]}: this looks like {what}; please say it "
                                         "without it (nothing personal is recorded)", personal=True)
    return None


def _refuse(problems: list[AnswerProblem]) -> None:
    if problems:
        raise (PersonalData if any(p.personal for p in problems) else AnswersRefused)(problems)


@dataclass(frozen=True)
class RInput:
    """What the subject states before acting (or, revised, at the end)."""

    goal: str
    planned_next: str
    confidence: float
    caused_by_self: float | None = None  # "was the last outcome your own doing?"; None at the first step

    def record(self) -> dict:
        r = {"goal": self.goal, "planned_next": self.planned_next}
        if self.caused_by_self is not None:
            r["caused_by_self"] = round(float(self.caused_by_self), 4)
        r["confidence"] = round(float(self.confidence), 4)
        return r


@dataclass
class _Session:
    session_id: str
    pair: int
    role: str  # a | b
    goal: str
    seed: int
    steps: list[dict] = field(default_factory=list)  # observation, r, action, action_space, outcome, cause
    done: bool = False


@dataclass(frozen=True)
class DraftInfo:
    draft_id: str
    path: Path
    study_id: str
    study_path: str
    subject_id: str
    progress: str
    updated_at: str
    browser: str | None = None  # the browser the run was made in (trb-collect serve), when it was


class Collection:
    """One subject's run of ``study`` into ``corpus``. Make it with :meth:`start` (after consent) or :meth:`resume`."""

    def __init__(self, study: Study, corpus: Corpus, subject_id: str, context_id: str | None, draft_id: str,
                 consented_at: str):
        self.study, self.corpus = study, corpus
        self.subject_id = subject_id
        self.context = study.context(context_id)
        self.draft_id = draft_id
        self.consented_at = consented_at
        self.sessions: list[_Session] = []
        for pair in range(study.pairs_per_subject):
            task = study.task(pair)
            goals = study.environment.goals(task)
            seed = int(hashlib.sha256(f"{study.seed}\0{subject_id}\0{pair}".encode()).hexdigest()[:8], 16)
            for role, goal in zip("ab", goals):
                self.sessions.append(_Session(f"{study.id}-{subject_id}-p{pair + 1}{role}", pair, role, goal, seed))
        self.index = 0
        self.revisions: list[dict] = []  # {session, t, r_prime, action} (skipped ones: r_prime None)
        self._episode = None
        self.browser: str | None = None  # trb-collect serve: the browser (a random cookie) the run is made in
        self._open()

    # ------------------------------------------------------------------ making and resuming
    @classmethod
    def start(cls, study: Study, corpus: Corpus, *, consent: bool, subject_id: str | None = None,
              context_id: str | None = None, browser: str | None = None) -> Collection:
        """A new run, once the subject has said yes to the consent text (``consent``); nothing is written before."""
        if consent is not True:
            raise UsageError("no consent: nothing is recorded without the subject's explicit yes")
        corpus.require()
        subject_id = check_subject_id(subject_id or new_subject_id())
        taken = {d.subject_id for d in list_drafts(corpus) if d.study_id == study.id}
        with corpus.open(write=False, purpose="trb-collect") as con:
            done = con.execute("SELECT count(*) FROM store.sessions WHERE session_id LIKE ?",
                               [f"{study.id}-{subject_id}-p%"]).fetchone()[0]
        if subject_id in taken or done:
            raise UsageError(f"subject {subject_id!r} already has {'a draft' if subject_id in taken else 'sessions'} "
                             f"in study {study.id!r}; resume the draft (trb-collect drafts) or use another id")
        draft_id = f"{study.id}-{subject_id}"
        c = cls(study, corpus, subject_id, context_id, draft_id, _now())
        c.browser = browser
        c._save()
        return c

    @classmethod
    def resume(cls, corpus: Corpus, draft_id: str, study: Study | None = None) -> Collection:
        """Pick a draft up where it stopped (the environment is replayed from its actions)."""
        path = Path(corpus.dir) / DRAFTS / f"{draft_id}.json"
        try:
            # not strict_json: a draft this app saved itself; the study file it names is read strictly
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise DraftError(f"no draft {draft_id!r} in {Path(corpus.dir) / DRAFTS} (trb-collect drafts lists them)") \
                from None
        study = study or load_study(d["study_path"])
        if study.sha256 != d["study_sha256"]:
            raise DraftError(f"draft {draft_id!r} was recorded under another version of {d['study_path']} "
                             f"(sha256 {d['study_sha256'][:12]}, now {study.sha256[:12]}); it cannot be resumed "
                             "under this one: restore that file, or discard the draft")
        c = cls(study, corpus, d["subject_id"], d["context_id"], draft_id, d["consented_at"])
        for s, saved in zip(c.sessions, d["sessions"]):
            c.index = c.sessions.index(s)
            c._open()
            for step in saved["steps"]:
                c._step(RInput(**step["r"]), step["action"], save=False)
            if not saved["steps"] and not saved["done"]:
                break
        c.index = d["index"]
        c._open()
        c.revisions = d["revisions"]
        c.browser = d.get("browser")
        return c

    # ------------------------------------------------------------------ the current session
    def _open(self) -> None:
        if self.index < len(self.sessions):
            s = self.sessions[self.index]
            ep = self.study.environment.start(self.study.task(s.pair), goal=s.goal, seed=s.seed,
                                              language=self.context.language)
            for step in s.steps:  # replay
                ep.step(step["action"])
            self._episode = ep

    @property
    def session(self) -> _Session | None:
        return self.sessions[self.index] if self.index < len(self.sessions) else None

    @property
    def collecting(self) -> bool:
        return self.session is not None

    @property
    def observation(self) -> str:
        return self._episode.observation

    @property
    def action_space(self) -> list[str] | None:
        return self._episode.action_space

    @property
    def step_number(self) -> int:
        """The current step, numbered from 1."""
        return len(self.session.steps) + 1

    @property
    def budget(self) -> int:
        return int(self.study.task(self.session.pair).get("budget", 0)) or self.step_number

    def progress(self) -> str:
        """Where the subject is: "session k of m · step i of n", or the revisions."""
        if self.collecting:
            return (f"session {self.index + 1} of {len(self.sessions)} · step {self.step_number} of {self.budget}")
        todo = self.revision_items()
        return f"revisions: {len(self.revisions)} of {len(self.revisions) + len(todo)} done" if todo or \
            self.revisions else "done: ready to save"

    def last_outcome(self) -> str | None:
        s = self.session
        if s is not None and s.steps:
            return s.steps[-1]["outcome"]
        return None

    def act(self, r: RInput, action: str | None, *, require_cause: bool = False):
        """Record the subject's r_t and action at the current step; the environment's outcome (and saves the draft).

        ``require_cause``: the "was the last change your doing?" answer is required from the second step on (the
        app asks it there). Raises :class:`AnswersRefused` (every problem at once) when the answers are refused.
        """
        return self._step(r, action, save=True, require_cause=require_cause)

    def step_problems(self, r: RInput, action: str | None, *, require_cause: bool = False) -> list[AnswerProblem]:
        """Every problem with these answers at the current step (none: :meth:`act` takes them)."""
        s = self.session
        if s is None:
            raise UsageError("every session is recorded; go on to the revisions")
        return (self._r_problems(r, first=not s.steps, require_cause=require_cause, space=self.action_space)
                + _action_problems(self.action_space, action))

    def _step(self, r: RInput, action: str | None, *, save: bool, require_cause: bool = False):
        s = self.session
        _refuse(self.step_problems(r, action, require_cause=require_cause))
        r = self._clean(r, first=not s.steps)
        space = self.action_space
        if space is None:
            action = action.strip()
        observation, seen = self.observation, self.observation_data
        out = self._episode.step(action)
        s.steps.append({"observation": observation, "r": asdict(r), "action": action, "action_space": space,
                        "outcome": out.outcome, "cause": out.cause, "seen": seen})
        if out.done:
            s.done = True
            self.index += 1
            self._open()
        if save:
            self._save()
        return out

    @property
    def observation_data(self) -> dict | None:
        """The current observation as the environment's structure (a grid's cell, goal, walls), if it has one."""
        data = getattr(self._episode, "observation_data", None)
        return dict(data) if isinstance(data, dict) else None

    def _r_problems(self, r: RInput, *, first: bool, require_cause: bool,
                    space: list[str] | None) -> list[AnswerProblem]:
        out = [_text_problem("goal", r.goal, "please say it in a few words"),
               _text_problem("planned", r.planned_next, "please say what you plan to do next") if space is None
               else None if r.planned_next in space else
               AnswerProblem("planned", f"{FIELD_WORDS['planned']}: choose one ({_keys(space)})")]
        if not first and require_cause and r.caused_by_self is None:
            out.append(AnswerProblem("cause", f"{FIELD_WORDS['cause']}: set it with ←/→ on its slider"))
        if r.confidence is None:
            out.append(AnswerProblem("confidence", f"{FIELD_WORDS['confidence']}: set it with ←/→ on its slider"))
        for name, p in (("confidence", r.confidence), ("cause", r.caused_by_self)):
            if p is not None and not 0 <= float(p) <= 1:
                out.append(AnswerProblem(name, f"{FIELD_WORDS[name]}: must be from 0 to 100 %, not {p!r}"))
        return [p for p in out if p is not None]

    def _clean(self, r: RInput, *, first: bool) -> RInput:
        return RInput(r.goal.strip(), r.planned_next.strip(), float(r.confidence), None if first else
                      (None if r.caused_by_self is None else float(r.caused_by_self)))

    # ------------------------------------------------------------------ revisions
    def revision_items(self) -> list[tuple[int, int]]:
        """(session index, t) of the steps still to be offered for revision, in order."""
        if self.collecting:
            return []
        done = {(v["session"], v["t"]) for v in self.revisions}
        return [(i, t) for i, s in enumerate(self.sessions) for t in range(len(s.steps))
                if self.study.revisable(t + 1) and (i, t) not in done]

    def revision_context(self, item: tuple[int, int]) -> dict:
        i, t = item
        s = self.sessions[i]
        step = s.steps[t]
        return {"session": i + 1, "sessions": len(self.sessions), "step": t + 1, "steps": len(s.steps),
                "observation": step["observation"], "seen": step.get("seen"), "r": step["r"], "action": step["action"],
                "action_space": step["action_space"], "outcome": step["outcome"]}

    def revision_problems(self, item: tuple[int, int], r_prime: RInput, action: str | None, *,
                          require_cause: bool = False) -> list[AnswerProblem]:
        """Every problem with a revised r' and the action it would lead to (none: :meth:`revise` takes them)."""
        step = self.sessions[item[0]].steps[item[1]]
        out = (self._r_problems(r_prime, first=item[1] == 0, require_cause=require_cause, space=step["action_space"])
               + _action_problems(step["action_space"], action, revision=True))
        if not out and self._clean(r_prime, first=item[1] == 0).record() == RInput(**step["r"]).record():
            out.append(AnswerProblem("answers", "Your revised answers are the same as what you said then: change at "
                                                "least one, or skip this step (Esc)"))
        return out

    def revise(self, item: tuple[int, int], r_prime: RInput | None, action: str | None = None, *,
               require_cause: bool = False) -> None:
        """The subject's revised r' at a step and the action they would then take; None skips the step.

        Raises :class:`AnswersRefused` (every problem at once) when the revised answers are refused."""
        if item not in self.revision_items():
            raise UsageError(f"step {item[1] + 1} of session {item[0] + 1} is not offered for revision")
        if r_prime is None:
            self.revisions.append({"session": item[0], "t": item[1], "r_prime": None, "action": None})
        else:
            _refuse(self.revision_problems(item, r_prime, action, require_cause=require_cause))
            r_prime = self._clean(r_prime, first=item[1] == 0)
            space = self.sessions[item[0]].steps[item[1]]["action_space"]
            if space is None:
                action = action.strip()
            self.revisions.append({"session": item[0], "t": item[1], "r_prime": asdict(r_prime), "action": action})
        self._save()

    # ------------------------------------------------------------------ records and the ingest
    def records(self) -> list[dict]:
        if self.collecting or self.revision_items():
            raise UsageError("the run is not finished: " + self.progress())
        out = []
        source = {"kind": "human_session", "collector": self.study.collector, "consent_ref": self.study.consent_ref,
                  "licence": self.study.licence}
        for s in self.sessions:
            out.append({"kind": "session", "schema_version": SCHEMA_VERSION, "session_id": s.session_id,
                        "source": source, "subject_id": self.subject_id, "context": self.context.record(),
                        "steps": [{"t": t, "observation": st["observation"], "r": RInput(**st["r"]).record(),
                                   "action": st["action"], "action_space": st["action_space"],
                                   "outcome": st["outcome"]} for t, st in enumerate(s.steps)]})
        author = {"person_id": self.subject_id}
        for v in self.revisions:
            if v["r_prime"] is None:
                continue
            s = self.sessions[v["session"]]
            r_prime = RInput(**v["r_prime"]).record()
            phi = ({"type": "distribution", "probs": {v["action"]: 1.0}, "n": 1}
                   if s.steps[v["t"]]["action_space"] is not None else {"type": "text", "text": v["action"], "n": 1})
            out.append({"kind": "counterfactual", "schema_version": SCHEMA_VERSION,
                        "cf_id": f"{s.session_id}.t{v['t']}.rev", "session_id": s.session_id, "t": v["t"],
                        "r_prime": r_prime, "origin": "same_session_revision",
                        "flags": {"adversarial": False, "ood": False}, "author": author, "phi": phi})
        for a, b in zip(self.sessions[0::2], self.sessions[1::2]):
            for me, partner in ((a, b), (b, a)):
                if not me.steps or not partner.steps:
                    continue
                mine, theirs = me.steps[0], partner.steps[0]
                r_prime = RInput(**theirs["r"]).record()
                if r_prime == RInput(**mine["r"]).record() or (mine["action_space"] is not None
                                                                and theirs["action"] not in mine["action_space"]):
                    continue
                phi = ({"type": "distribution", "probs": {theirs["action"]: 1.0}, "n": 1}
                       if mine["action_space"] is not None else {"type": "text", "text": theirs["action"], "n": 1})
                out.append({"kind": "counterfactual", "schema_version": SCHEMA_VERSION,
                            "cf_id": f"{me.session_id}.t0.pair", "session_id": me.session_id, "t": 0,
                            "r_prime": r_prime, "origin": "paired_session", "paired_session_id": partner.session_id,
                            "flags": {"adversarial": False, "ood": False}, "author": author, "phi": phi})
        for s in self.sessions:
            for t, st in enumerate(s.steps[:-1]):
                if st["cause"] in ("self", "exogenous"):
                    out.append({"kind": "attribution", "schema_version": SCHEMA_VERSION,
                                "item_id": f"{s.session_id}.t{t}.attr", "session_id": s.session_id, "t": t,
                                "design_label": st["cause"],
                                "note": f"from the {self.study.environment.name} environment's ground truth"})
        return out

    def finish(self, *, wait_seconds: float | None = None,
               on_wait: Callable[[LockWait], None] | None = None) -> IngestReport:
        """Ingest every record of the run, all or none; the draft goes once the ingest has committed.

        ``on_wait`` is told (once) who holds the corpus when the ingest has to wait for it.

        Raises:
            CorpusBusy: the corpus was held by another process past ``wait_seconds``; the draft is kept.
            InvalidInput, RecordConflict: the records were refused; nothing was written, the draft is kept.
        """
        records = self.records()
        name = f"trb-collect study {self.study.id} ({self.study.path}) subject {self.subject_id}, saved {_now()}"
        report = ingest_records(self.corpus, {name: records}, progress=False, wait_seconds=wait_seconds,
                                **({} if on_wait is None else {"on_wait": on_wait}))
        self._draft_path().unlink(missing_ok=True)
        return report

    # ------------------------------------------------------------------ the draft
    def _draft_path(self) -> Path:
        return Path(self.corpus.dir) / DRAFTS / f"{self.draft_id}.json"

    def _save(self) -> None:
        path = self._draft_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        d = {"study_path": str(Path(self.study.path).resolve()), "study_sha256": self.study.sha256,
             "study_id": self.study.id, "subject_id": self.subject_id, "context_id": self.context.id,
             "consent_ref": self.study.consent_ref, "consented_at": self.consented_at, "index": self.index,
             "progress": self.progress(), "updated_at": _now(),
             "sessions": [{"session_id": s.session_id, "done": s.done,
                           "steps": [{"r": st["r"], "action": st["action"]} for st in s.steps]}
                          for s in self.sessions],
             "revisions": self.revisions, "browser": self.browser}
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(d, indent=1), encoding="utf-8")
        os.replace(tmp, path)


def _action_problems(space: list[str] | None, action: str | None, *, revision: bool = False) -> list[AnswerProblem]:
    what = "The move you would then make" if revision else FIELD_WORDS["action"]
    if space is None:
        p = _text_problem("action", action, "please say what you do")
        return [] if p is None else [AnswerProblem("action", p.message.replace(FIELD_WORDS["action"], what),
                                                   p.personal)]
    if action is None:
        return [AnswerProblem("action", f"{what}: choose one ({_keys(space)})")]
    if action not in space:
        return [AnswerProblem("action", f"{what}: {action!r} is not one of {', '.join(space)}")]
    return []


def _keys(space: list[str]) -> str:
    return f"1–{min(len(space), 9)} or ←/→"


def list_drafts(corpus: Corpus) -> list[DraftInfo]:
    """Every draft beside ``corpus``, oldest first."""
    folder = Path(corpus.dir) / DRAFTS
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            # not strict_json: drafts this app saved itself (listed only)
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append(DraftInfo(p.stem, p, d.get("study_id", "?"), d.get("study_path", "?"), d.get("subject_id", "?"),
                             d.get("progress", "?"), d.get("updated_at", "?"), d.get("browser")))
    return sorted(out, key=lambda d: d.updated_at)


def discard_draft(corpus: Corpus, draft_id: str) -> DraftInfo:
    """Delete a draft (what it held is not ingested); the draft that was deleted."""
    for d in list_drafts(corpus):
        if d.draft_id == draft_id:
            d.path.unlink()
            return d
    raise DraftError(f"no draft {draft_id!r} in {Path(corpus.dir) / DRAFTS} (trb-collect drafts lists them)")
