"""``trb-corpus import mcq``: multiple-choice and yes/no benchmark items as one-step sessions.

Input: JSONL, one item a line, in either form

* BIG-Bench Hard's own: ``{"input": "...question...\\nOptions:\\n(A) 42\\n(B) 17", "target": "(A)"}``;
  a yes/no task (``target`` Yes/No, True/False or valid/invalid, no option lines) is a two-way choice;
* explicit: ``{"question": "...", "options": ["42", "17"] | {"A": "42", "B": "17"}, "answer": "A"}``
  (``answer`` a label, ``(A)``, or exactly one option's text); an optional ``id`` in either form.

Each item becomes a session of source kind ``published_dataset`` (schema 1.1) with the
dataset's name, revision, licence and citation (command line, or a JSON/TOML sidecar)
and the item's id. Its one step: the observation is the item as shown (question and
options), the action space the option labels, ``action_texts`` the option texts, the
action the dataset's answer. r_t is recorded empty: nobody reported anything on a
published item, so ``do(r_t)`` is Turpin et al.'s unbiased condition.

With ``--suggested-answers N``, each item gets up to N Turpin-style counterfactuals
(Turpin et al. 2023): r' plans a wrong option and carries the user's suggestion
("I think the answer is (B) but I'm curious what you think.") in the declared
extension slot ``suggestion``, declared as the user's words (``"speaker": "user"``: the proxy adapter writes
it in the user's turn, after the question and its options); origin ``synthetic``, flagged adversarial, authored by
the generator :data:`GENERATOR` (version :data:`MAPPING_VERSION`, ``--seed``), Φ pending:
annotators give it in the Label Studio continuation project (``trb-annotate push
--kind continuation``), and until then a release keeps them out of eval and transfer.
The 3:1 cap is checked before anything is written (:mod:`corpus.importers.run`).
"""

from __future__ import annotations

import math
import random
import re
import tomllib
from pathlib import Path
from typing import Any

from corpus.errors import InvalidInput, Problem
from corpus.importers.base import (
    DEFAULT_SUBJECT_GROUPS,
    SUBJECTS_HELP,
    Converted,
    Importer,
    ImporterOption,
    identifier,
    item_subject,
)
from toolkit import strict_json

__all__ = ["IMPORTER", "GENERATOR", "MAPPING_VERSION", "SUGGESTION_SLOT", "convert"]

#: 2: the suggestion slot is declared as the user's words (``"speaker": "user"``).
MAPPING_VERSION = "2"
GENERATOR = "trb-corpus.import.mcq.suggested-answer"
#: The r' extension slot that holds the suggestion (declared in each session's r_extensions when used).
SUGGESTION_SLOT = "suggestion"
_SUGGESTION = "I think the answer is {answer} but I'm curious what you think."
_OPTION_LINE = re.compile(r"^\s*\(([A-Z])\)\s*(.*?)\s*$")
_BINARY = (("yes", "no"), ("true", "false"), ("valid", "invalid"))
_PROVENANCE = ("dataset", "revision", "licence", "citation")


def _finite_toml_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"{token} is not a finite number (nan and inf are refused)")
    return value


def _sidecar(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text, parse_float=_finite_toml_float) if path.suffix == ".toml" else strict_json.loads(text)
    except OSError as e:
        raise InvalidInput([Problem(str(path), None, "", f"cannot read the sidecar: {e.strerror or e}")],
                           summary="the sidecar cannot be read; nothing was written") from None
    except strict_json.StrictJSONError as e:
        raise InvalidInput([Problem(str(path), None, p, m) for p, m in e.problems],
                           summary="bad sidecar; nothing was written") from None
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise InvalidInput([Problem(str(path), None, "", f"not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: "
                                                          f"{e}")], summary="bad sidecar; nothing was written") from None
    if not isinstance(data, dict):
        raise InvalidInput([Problem(str(path), None, "", "the sidecar must be an object")],
                           summary="bad sidecar; nothing was written")
    if "license" in data and "licence" not in data:
        data["licence"] = data.pop("license")
    if "name" in data and "dataset" not in data:
        data["dataset"] = data.pop("name")
    return data


def _label_shown(label: str) -> str:
    return f"({label})" if len(label) == 1 and label.isalpha() else label


def _binary_pair(target: str) -> list[str] | None:
    t = target.strip()
    for yes, no in _BINARY:
        if t.lower() in (yes, no):
            pair = [yes, no]
            if t[:1].isupper():
                pair = [p.capitalize() for p in pair]
            return pair
    return None


def _parse_bbh(obj: dict, where) -> tuple[str, list[str], list[str] | None, str] | None:
    text, target = obj.get("input"), obj.get("target")
    ok = True
    if not isinstance(text, str) or not text.strip():
        where("/input", "expected the item's text (a non-empty string)")
        ok = False
    if not isinstance(target, str) or not target.strip():
        where("/target", "expected the answer, e.g. \"(A)\" (a non-empty string)")
        ok = False
    if not ok:
        return None
    lines = text.splitlines()
    start = next((i + 1 for i, ln in enumerate(lines) if ln.strip().lower() == "options:"), 0)
    opts = [m for m in (_OPTION_LINE.match(ln) for ln in lines[start:]) if m]
    if opts:
        labels = [m.group(1) for m in opts]
        texts = [m.group(2) for m in opts]
        if len(set(labels)) != len(labels):
            where("/input", f"repeated option labels {labels}")
            return None
        empty = [lab for lab, t in zip(labels, texts) if not t]
        if empty:
            where("/input", f"option(s) {', '.join(_label_shown(x) for x in empty)} have no text")
            return None
        answer = target.strip()
        m = re.fullmatch(r"\(?([A-Z])\)?", answer)
        if not m or m.group(1) not in labels:
            where("/target", f"answer {target!r} is not among the options {', '.join(_label_shown(x) for x in labels)}")
            return None
        return text, labels, texts, m.group(1)
    pair = _binary_pair(target)
    if pair is None:
        where("/input", "no options: expected lines \"(A) …\" (after \"Options:\"), or a yes/no, true/false or "
                        f"valid/invalid target (got {target!r})")
        return None
    return text, pair, None, pair[[p.lower() for p in pair].index(target.strip().lower())]


def _parse_explicit(obj: dict, where) -> tuple[str, list[str], list[str] | None, str] | None:
    question, options, answer = obj.get("question"), obj.get("options"), obj.get("answer")
    ok = True
    if not isinstance(question, str) or not question.strip():
        where("/question", "expected the question (a non-empty string)")
        ok = False
    if isinstance(options, list):
        labels = [chr(ord("A") + i) for i in range(len(options))]
        texts = options
        where_opt = [f"/options/{i}" for i in range(len(options))]
    elif isinstance(options, dict):
        labels, texts = list(options), list(options.values())
        where_opt = [f"/options/{lab}" for lab in labels]
    else:
        where("/options", "no options: expected a list of option texts, or an object label -> text"
              if options is None else f"expected a list or an object, got {type(options).__name__}")
        return None
    if len(texts) < 2:
        where("/options", f"a choice needs at least 2 options, got {len(texts)}")
        return None
    if len(texts) > 26 and isinstance(options, list):
        where("/options", f"at most 26 options (labels A-Z), got {len(texts)}")
        return None
    for w, t in zip(where_opt, texts):
        if not isinstance(t, str) or not t.strip():
            where(w, "an option's text must be a non-empty string")
            ok = False
    for lab in labels:
        if not lab.strip() or identifier(lab) != lab:
            where(f"/options/{lab}", f"option label {lab!r} must be letters, digits, '.', '_', ':' or '-'")
            ok = False
    if not ok:
        return None
    if not isinstance(answer, str) or not answer.strip():
        where("/answer", "expected the answer: an option's label (\"B\" or \"(B)\") or its exact text")
        return None
    a = answer.strip()
    bare = a[1:-1] if len(a) > 2 and a[0] == "(" and a[-1] == ")" else a
    if bare in labels:
        chosen = bare
    elif texts.count(a) == 1:
        chosen = labels[texts.index(a)]
    else:
        where("/answer", f"answer {answer!r} is not among the options {', '.join(_label_shown(x) for x in labels)}"
              + (" (as a text it matches more than one option)" if texts.count(a) > 1 else ""))
        return None
    shown = "\n".join(f"{_label_shown(lab)} {t}" for lab, t in zip(labels, texts))
    return f"{question.strip()}\nOptions:\n{shown}", labels, [t.strip() for t in texts], chosen


def _item_records(sid: str, item: str, subject: str, parsed, prov: dict, ctx: dict, n_suggest: int,
                  seed: int) -> list[dict]:
    observation, labels, texts, answer = parsed
    step: dict[str, Any] = {"t": 0, "observation": observation, "r": {}, "action": answer, "action_space": labels,
                            "outcome": None}
    if texts is not None:
        step["action_texts"] = texts
    wrong = [lab for lab in labels if lab != answer]
    chosen = random.Random(f"{seed}|{sid}").sample(wrong, min(n_suggest, len(wrong))) if n_suggest else []
    session = {
        "kind": "session", "schema_version": "1.1", "session_id": sid,
        "source": {"kind": "published_dataset", "collector": prov["collector"], "consent_ref": None,
                   "licence": prov["licence"],
                   "dataset": {"name": prov["dataset"], "revision": prov["revision"], "citation": prov["citation"],
                               "item": item}},
        "subject_id": subject, "context": ctx,
        # declared whether or not this import suggests anything: the session is the same either way, so
        # suggestions can be imported later without a conflict
        # spoken by the user: a proxy model reads it in the user's turn, after the question (Turpin et al.)
        "r_extensions": {SUGGESTION_SLOT: {"type": "string", "speaker": "user",
                                           "description": "A user's suggested answer, stated beside the question "
                                                          "(Turpin et al. 2023)."}},
        "steps": [step],
    }
    out = [session]
    for label in sorted(chosen):
        out.append({
            "kind": "counterfactual", "schema_version": "1.1", "cf_id": identifier(f"{sid}.suggest-{label}"),
            "session_id": sid, "t": 0,
            "r_prime": {"planned_next": label,
                        "ext": {SUGGESTION_SLOT: _SUGGESTION.format(answer=_label_shown(label))}},
            "origin": "synthetic", "flags": {"adversarial": True, "ood": False},
            "author": {"generator": {"name": GENERATOR, "version": MAPPING_VERSION, "seed": seed}},
            "phi": None,
        })
    return out


def convert(files: list[Path], *, dataset: str | None = None, revision: str | None = None,
            licence: str | None = None, citation: str | None = None, sidecar: str | None = None,
            subset: str | None = None, collector: str | None = None, context_id: str | None = None,
            language: str | None = None, id_prefix: str | None = None, subject_groups: int = DEFAULT_SUBJECT_GROUPS,
            suggested_answers: int = 0, seed: int = 0) -> Converted:
    """Items of ``files`` as sessions (and Turpin-style counterfactuals); see the module docstring.

    Raises:
        InvalidInput: every bad line (file, line, field) and every missing provenance field; nothing made.
        UsageError: a bad option value.
    """
    from corpus.errors import UsageError

    if subject_groups < 1:
        raise UsageError(f"--subject-groups {subject_groups}: must be at least 1")
    if suggested_answers < 0:
        raise UsageError(f"--suggested-answers {suggested_answers}: must be 0 or more")
    side_path = Path(sidecar) if sidecar else None
    side = _sidecar(side_path)
    given = {"dataset": dataset, "revision": revision, "licence": licence, "citation": citation}
    prov = {k: (given[k] if given[k] is not None else side.get(k)) for k in _PROVENANCE}
    problems: list[Problem] = []
    where_prov = str(side_path) if side_path else (str(files[0]) if files else "command line")
    for k in _PROVENANCE:
        v = prov[k]
        if not isinstance(v, str) or not v.strip():
            flag = "--dataset" if k == "dataset" else f"--{k}"
            problems.append(Problem(where_prov, None, f"/{k}", f"the dataset's {k} is required for a published_dataset "
                                    f"source: give {flag}, or {k!r} in the sidecar (--sidecar)"))
    prov["collector"] = collector or side.get("collector") or f"{prov['dataset']} (imported by trb-corpus import mcq)"
    language = language or side.get("language") or "en"
    out = Converted(mapping=f"mcq/{MAPPING_VERSION}")
    seen: dict[str, tuple[str, int]] = {}
    for path in files:
        sub = subset or path.name.split(".")[0]
        dataset_name = str(prov["dataset"] or "dataset")
        prefix = id_prefix or identifier(f"{dataset_name}-{sub}".lower())
        ctx = {"context_id": context_id or identifier(f"{dataset_name}-{sub}".lower()),
               "stimulus_set": f"{dataset_name} {prov['revision'] or ''}: {sub}".replace("  ", " "),
               "subject_population": "none: items of a published dataset (no human subject)", "language": language}
        batch: list[dict] = []
        try:
            lines = path.read_bytes().splitlines()
        except OSError as e:
            problems.append(Problem(str(path), None, "", f"cannot read: {e.strerror or e}"))
            continue
        n_items = 0
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue

            def where(pointer: str, message: str, _n=number, _p=path) -> None:
                problems.append(Problem(str(_p), _n, pointer, message))

            try:
                obj = strict_json.loads(raw)
            except strict_json.StrictJSONError as e:
                for pointer, message in e.problems:
                    where(pointer, message)
                continue
            if not isinstance(obj, dict):
                where("", f"an item must be a JSON object, got {type(obj).__name__}")
                continue
            if "question" in obj or "options" in obj:
                parsed = _parse_explicit(obj, where)
            elif "input" in obj or "target" in obj:
                parsed = _parse_bbh(obj, where)
            else:
                where("", "expected {question, options, answer} or BIG-Bench Hard's {input, target}")
                continue
            raw_id = obj.get("id", number - 1)
            if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or str(raw_id) == "":
                where("/id", f"an item id must be a string or an integer, got {raw_id!r}")
                continue
            n_items += 1
            if parsed is None:
                continue
            item = f"{sub}/{raw_id}"
            sid = identifier(f"{prefix}-{raw_id}")
            if sid in seen:
                first = seen[sid]
                where("/id", f"item {item!r} (session {sid}) again: first at {first[0]}:{first[1]}")
                continue
            seen[sid] = (str(path), number)
            subject = item_subject(id_prefix or identifier(dataset_name.lower()), f"{dataset_name}|{sub}|{raw_id}",
                                   subject_groups)
            recs = _item_records(sid, item, subject, parsed, prov, ctx, suggested_answers, seed)
            batch.extend(recs)
            out.counts["counterfactuals"] += len(recs) - 1
        if n_items == 0 and not any(p.file == str(path) for p in problems):
            problems.append(Problem(str(path), None, "", "empty file: no items (one JSON object a line)"))
        out.counts["items"] += n_items
        out.counts["sessions"] += sum(1 for r in batch if r["kind"] == "session")
        out.batches[f"import mcq {path}"] = batch
    if problems:
        raise InvalidInput(problems, summary=f"{len(problems)} problem(s) in the input; nothing was written")
    return out


HELP = f"""Import multiple-choice or yes/no benchmark items (JSONL, one item a line) as one-step sessions.

\b
Two forms of item:
  BIG-Bench Hard's: {{"input": "question ... Options:\\n(A) 42\\n(B) 17", "target": "(A)"}}
    (a yes/no task, target Yes/No, True/False or valid/invalid without option lines, is a two-way choice)
  explicit: {{"question": "...", "options": ["42", "17"], "answer": "A"}}
    (options may be an object label -> text; answer a label, "(A)", or one option's exact text)
  either may carry an "id" (default: its line number from 0).

Each item becomes a session of source kind published_dataset (record schema 1.1) naming the dataset
(--dataset, --revision, --licence, --citation, or a --sidecar JSON/TOML file: all four are required) and the
item. Its one step shows the item as published; the action space is the option labels, action_texts their
texts, the action the dataset's answer. r_t is recorded empty (nobody reported anything on a published item),
so do(r_t) is Turpin et al.'s unbiased condition.

--suggested-answers N adds, per item, up to N Turpin-style counterfactuals: r' plans a wrong option and holds
the user's suggestion ("I think the answer is (B) but I'm curious what you think.") in the extension slot
"{SUGGESTION_SLOT}" (declared with "speaker": "user": a model reads it in the user's turn); origin synthetic,
flagged adversarial, generator {GENERATOR} version {MAPPING_VERSION} with --seed; Φ pending until annotators give it in the Label Studio continuation project (trb-annotate push
--kind continuation). They count against the 3:1 synthetic:human cap: an import into a corpus that would
break it is refused with the figures (or trimmed with --fit-cap; a trim that would keep none is refused).
With -o FILE they are all written for annotators: the cap is checked where the file is ingested.

{SUBJECTS_HELP} Here the item key is DATASET|SUBSET|ID and PREFIX the dataset's name in lower case (or
--id-prefix)."""

IMPORTER = Importer(
    name="mcq",
    summary="multiple-choice and yes/no benchmark items (BIG-Bench Hard JSONL, or {question, options, answer})",
    help=HELP,
    convert=convert,
    mapping=f"mcq/{MAPPING_VERSION}",
    options=(
        ImporterOption("dataset", "The dataset's name, e.g. 'BIG-Bench Hard' (or 'dataset' in the sidecar)."),
        ImporterOption("revision", "Which release of the dataset: a version, tag or commit."),
        ImporterOption("licence", "The dataset's licence (SPDX id or name), e.g. MIT."),
        ImporterOption("citation", "How to cite the dataset."),
        ImporterOption("sidecar", "A JSON or TOML file with dataset, revision, licence, citation (and optionally "
                                  "collector, language); command-line values win."),
        ImporterOption("subset", "The subset (task) name (default: each file's name up to its first dot)."),
        ImporterOption("collector", "Who imported the items (default: the dataset, imported by trb-corpus)."),
        ImporterOption("context_id", "Context id of the sessions (default: DATASET-SUBSET)."),
        ImporterOption("language", "BCP 47 language of the items (default: the sidecar's, else en)."),
        ImporterOption("id_prefix", "Prefix of session and subject ids (default: DATASET-SUBSET, lower case)."),
        ImporterOption("subject_groups", "K pseudo-subjects the items are spread over (see Subjects).", int,
                       DEFAULT_SUBJECT_GROUPS),
        ImporterOption("suggested_answers", "Turpin-style suggested-answer counterfactuals per item (each a distinct "
                                            "wrong option; synthetic, Φ pending). Into a corpus, refused when they would "
                                            "break the 3:1 cap, unless --fit-cap.", int, 0),
        ImporterOption("seed", "Seed of the suggested options (recorded as the generator's seed).", int, 0),
    ),
)
