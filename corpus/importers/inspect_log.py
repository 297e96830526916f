"""``trb-corpus import inspect``: inspect_ai evaluation logs (``.eval`` / ``.json``) as ``model_rollout`` sessions.

The logs are read by inspect_ai's own reader (``inspect_ai.log.read_eval_log``), in
inspect_ai's own environment: inspect_ai pins (fsspec, textual, pydantic, s3fs …)
move faster than ours, so it lives in ``.venv-inspect`` (``make install-inspect``) and
:mod:`corpus.importers.inspect_reader` runs there as a subprocess, handing the samples
back as JSON. The interpreter is ``$TRB_INSPECT_PYTHON``, else this one if it has
inspect_ai, else the checkout's ``.venv-inspect``.

Every sample (each epoch) becomes one session; the mapping from its messages to steps
and r_t slots is :data:`MAPPING` (version :data:`MAPPING_VERSION`). What it cannot map is
left out and counted by reason, never invented.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from corpus.errors import InvalidInput, Problem, UsageError
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

__all__ = ["IMPORTER", "MAPPING", "MAPPING_VERSION", "REASONING_SLOT", "inspect_python", "read_log", "convert"]

MAPPING_VERSION = "inspect/1"
#: The declared extension slot that holds the model's own reasoning at a step.
REASONING_SLOT = "reasoning"
#: The mapping from an inspect sample's messages to a session (README "Importing outside data").
MAPPING: dict[str, str] = {
    "session": "one per sample and epoch; source model_rollout; subject a pseudo-subject of the sample (task|id)",
    "step": "one per assistant message, in order",
    "observation": "the system, user and tool messages since the previous assistant message, one 'role: text' line "
                   "each ('(no new input)' when there are none)",
    f"r.ext.{REASONING_SLOT}": "the message's reasoning blocks (ContentReasoning, not redacted); with a tool call and "
                               "no reasoning block, the message's text (said before acting)",
    "r.goal, r.planned_next, r.confidence": "lines 'Goal: …', 'Plan: …' (or 'Next: …'), 'Confidence: 0.8' (or 80%) in "
                                            "that reasoning; r is null when the message has no reasoning",
    "action": "its tool calls as name({JSON arguments}), '; '-joined; else its text. For a sample with choices, the "
              "last answer's letter read from 'ANSWER: X' (inspect's multiple_choice) or a lone letter: action_space "
              "the letters, action_texts the choices",
    "outcome": "the tool messages answering its calls; for the last step, else the sample's scores",
    "left out, counted": "samples that ended in an error or have no assistant message; assistant messages with "
                         "neither text nor a tool call; redacted reasoning; non-text content (images, audio, …); "
                         "tool messages before any assistant message; confidences not in [0, 1]; answers not read "
                         "as one of the choices (the step stays open-ended)",
}
_READER = Path(__file__).with_name("inspect_reader.py")
_ROOT = Path(__file__).resolve().parents[2]
_SLOT_LINE = re.compile(r"^\s*(goal|plan|planned[ _]next|next)\s*[:=]\s*(.+?)\s*$|^\s*(confidence)\s*[:=]\s*(.+?)\s*$",
                        re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"ANSWER\s*:\s*\(?([A-Z])\)?", re.IGNORECASE)
_INSTALL_HINT = ("inspect_ai is needed to read inspect logs: `make install-inspect` (its own venv, .venv-inspect), "
                 "or `pip install inspect-ai` into any environment and set TRB_INSPECT_PYTHON to its python")


def inspect_python() -> str:
    """The interpreter that reads inspect logs (see the module docstring); a UsageError with the install hint if none."""
    env = os.environ.get("TRB_INSPECT_PYTHON")
    if env:
        if not Path(env).is_file():
            raise UsageError(f"TRB_INSPECT_PYTHON={env} is not a file; {_INSTALL_HINT}")
        return env
    if importlib.util.find_spec("inspect_ai") is not None:
        return sys.executable
    venv = _ROOT / ".venv-inspect" / "bin" / "python"
    if venv.is_file():
        return str(venv)
    raise UsageError(_INSTALL_HINT)


def read_log(path: Path) -> tuple[dict, list[dict]]:
    """The header and samples of one inspect log, read by inspect_ai's own reader (in its interpreter).

    Raises:
        InvalidInput: inspect_ai cannot read the file (its reason, naming the file).
        UsageError: no interpreter with inspect_ai.
    """
    if not path.is_file():
        raise InvalidInput([Problem(str(path), None, "", "no such file" if not path.exists() else "not a file")],
                           summary="nothing was written")
    proc = subprocess.run([inspect_python(), str(_READER), str(path)], capture_output=True, text=True,
                          encoding="utf-8")
    if proc.returncode == 3:
        raise UsageError(f"{proc.stderr.strip()}; {_INSTALL_HINT}")
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise InvalidInput([Problem(str(path), None, "", f"not an inspect_ai log inspect_ai can read: {reason}")],
                           summary="nothing was written")
    lines = []
    for line in filter(str.strip, proc.stdout.splitlines()):
        try:  # the log's own values, as the reader dumped them: a NaN or Infinity in them is refused here
            lines.append(strict_json.loads(line))
        except strict_json.StrictJSONError as e:
            where = "the header" if not lines else f"sample {len(lines)}"
            raise InvalidInput([Problem(str(path), None, "", f"{where}: not strict JSON ({e})")],
                               summary="nothing was written") from None
    return lines[0]["header"], [x["sample"] for x in lines[1:]]


def _text(content, unmapped) -> tuple[str, list[str], int]:
    """(text, reasoning blocks, redacted reasoning blocks) of a message's content."""
    if isinstance(content, str):
        return content, [], 0
    texts, reasoning, redacted = [], [], 0
    for part in content or []:
        kind = part.get("type")
        if kind == "text":
            texts.append(part.get("text") or "")
        elif kind == "reasoning":
            if part.get("redacted"):
                redacted += 1
            else:
                reasoning.append(part.get("reasoning") or "")
        else:
            unmapped[f"non-text content ({kind})"] += 1
    return "\n".join(t for t in texts if t), [r for r in reasoning if r], redacted


def _confidence(text: str) -> float | None:
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _r_of(reasoning: str, unmapped) -> dict:
    r: dict = {"ext": {REASONING_SLOT: reasoning}}
    for m in _SLOT_LINE.finditer(reasoning):
        if m.group(1):
            key = "goal" if m.group(1).lower() == "goal" else "planned_next"
            r.setdefault(key, m.group(2))
        else:
            c = _confidence(m.group(4))
            if c is None:
                unmapped["confidence not a number in [0, 1]"] += 1
            else:
                r.setdefault("confidence", c)
    return r


def _call(tc: dict) -> str:
    return f"{tc.get('function')}({json.dumps(tc.get('arguments') or {}, sort_keys=True, ensure_ascii=False)})"


def _steps(sample: dict, unmapped) -> list[dict]:
    steps: list[dict] = []
    pending: list[str] = []
    for msg in sample.get("messages") or []:
        role = msg.get("role")
        text, reasoning, redacted = _text(msg.get("content"), unmapped)
        if role != "assistant":
            if role == "tool":
                if not steps:
                    unmapped["tool message before any assistant message"] += 1
                    continue
                steps[-1]["outcome"] = "\n".join(x for x in (steps[-1]["outcome"], text) if x) or None
                pending.append(f"tool {msg.get('function') or ''}: {text}".replace("tool : ", "tool: "))
            else:
                pending.append(f"{role}: {text}")
            continue
        if redacted:
            unmapped["redacted reasoning"] += redacted
        calls = msg.get("tool_calls") or []
        thought = "\n".join(reasoning) or (text if calls else "")
        if calls:
            action = "; ".join(_call(tc) for tc in calls)
        elif text.strip():
            action = text
        else:
            unmapped["assistant message with neither text nor a tool call"] += 1
            continue
        steps.append({"t": len(steps), "observation": "\n".join(pending) or "(no new input)",
                      "r": _r_of(thought, unmapped) if thought else None, "action": action,
                      "action_space": None, "outcome": None, "_calls": bool(calls)})
        pending = []
    return steps


def _choices(step: dict, choices: list[str], unmapped) -> None:
    letters = [chr(ord("A") + i) for i in range(len(choices))]
    text = step["action"].strip()
    found = _ANSWER.findall(text)
    letter = found[-1].upper() if found else (text.strip("() .").upper() if len(text.strip("() .")) == 1 else None)
    if letter in letters and all(c for c in choices):
        step.update(action=letter, action_space=letters, action_texts=list(choices))
    else:
        unmapped["answer not read as one of the choices (step left open-ended)"] += 1


def convert(files: list[Path], *, collector: str | None = None, licence: str | None = None,
            context_id: str | None = None, language: str | None = None, id_prefix: str | None = None,
            subject_groups: int = DEFAULT_SUBJECT_GROUPS) -> Converted:
    """Sessions of every sample of every log in ``files`` (see :data:`MAPPING`)."""
    if subject_groups < 1:
        raise UsageError(f"--subject-groups {subject_groups}: must be at least 1")
    out = Converted(mapping=MAPPING_VERSION)
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for path in files:
        try:
            header, samples = read_log(path)
        except InvalidInput as e:
            problems += e.problems
            continue
        task, model = header.get("task") or "task", header.get("model") or "model"
        prefix = id_prefix or identifier(f"inspect-{task}-{(header.get('eval_id') or '')[:10]}".lower())
        ctx = {"context_id": context_id or identifier(f"inspect-{task}".lower()),
               "stimulus_set": f"inspect_ai task {task}" + (f" (dataset {header['dataset']})" if header.get("dataset")
                                                             else ""),
               "subject_population": f"model {model}", "language": language or "en"}
        batch = []
        for sample in samples:
            out.counts["samples"] += 1
            if sample.get("error"):
                out.unmapped["sample ended in an error"] += 1
                continue
            steps = _steps(sample, out.unmapped)
            if not steps:
                out.unmapped["sample without an assistant message"] += 1
                continue
            if sample.get("choices"):
                answers = [s for s in steps if not s["_calls"]]
                if answers:
                    _choices(answers[-1], sample["choices"], out.unmapped)
            last = steps[-1]
            if last["outcome"] is None and sample.get("scores"):
                last["outcome"] = "scores: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in sample["scores"].items())
            for s in steps:
                del s["_calls"]
            sid = identifier(f"{prefix}-{sample.get('id')}-e{sample.get('epoch')}")
            if sid in seen:
                problems.append(Problem(str(path), None, f"/samples/{sample.get('id')}",
                                        f"sample {sample.get('id')} epoch {sample.get('epoch')} (session {sid}) again: "
                                        f"first in {seen[sid]}"))
                continue
            seen[sid] = str(path)
            batch.append({
                "kind": "session", "schema_version": "1.1", "session_id": sid,
                "source": {"kind": "model_rollout",
                           "collector": collector or f"inspect_ai log {path.name} ({model})",
                           "consent_ref": None, "licence": licence},
                "subject_id": item_subject(id_prefix or identifier(task.lower()), f"{task}|{sample.get('id')}",
                                           subject_groups),
                "context": ctx,
                "r_extensions": {REASONING_SLOT: {"type": "string", "description": "The model's own reasoning at "
                                                  "this step, as the inspect_ai log holds it (mapping "
                                                  f"{MAPPING_VERSION})."}},
                "steps": steps,
            })
            out.counts["steps"] += len(steps)
        out.counts["sessions"] += len(batch)
        out.batches[f"import inspect {path}"] = batch
    if problems:
        raise InvalidInput(problems, summary=f"{len(problems)} problem(s) in the input; nothing was written")
    return out


HELP = f"""Import inspect_ai evaluation logs (.eval or .json) as model_rollout sessions.

The logs are read with inspect_ai's own reader (read_eval_log), in inspect_ai's interpreter: $TRB_INSPECT_PYTHON,
else this one if it has inspect_ai, else the checkout's .venv-inspect (make install-inspect).

\\b
Mapping {MAPPING_VERSION} (what becomes what):
""" + "\n".join(f"  {k}: {v}" for k, v in MAPPING.items()) + f"""

The counts of what was left out are printed after the import.

{SUBJECTS_HELP} Here the item key is TASK|SAMPLE-ID and PREFIX the task name (or --id-prefix)."""

IMPORTER = Importer(
    name="inspect",
    summary="inspect_ai evaluation logs (.eval/.json) as model_rollout sessions",
    help=HELP,
    convert=convert,
    mapping=MAPPING_VERSION,
    options=(
        ImporterOption("collector", "Who ran the evaluation (default: the log's file name and model)."),
        ImporterOption("licence", "Licence of the logs' content (SPDX id or name)."),
        ImporterOption("context_id", "Context id of the sessions (default: inspect-TASK)."),
        ImporterOption("language", "BCP 47 language of the self-reports (default: en)."),
        ImporterOption("id_prefix", "Prefix of session and subject ids (default: inspect-TASK-EVALID, and TASK)."),
        ImporterOption("subject_groups", "K pseudo-subjects the samples are spread over (see Subjects).", int,
                       DEFAULT_SUBJECT_GROUPS),
    ),
)
