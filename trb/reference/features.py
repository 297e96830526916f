"""Hashed features of a step context and of slot strings (pure Python, no torch).

The reference models see a context only through these features, so they run on
any release: any language, any action strings. Nothing here reads the current
step's r_t (``StepContext.r``): that is what the model must state, not read.

Context features (:func:`context_features`), each prefixed by the field it came from:

* the current observation (``o``), the session's first observation (``f``: it
  usually describes the task), the previous step's observation (``po``),
  action (``a1``) and outcome (``oc``), the actions two and three steps back
  (``a2``, ``a3``), the previous step's recorded r (``pr``, when there is one:
  an *earlier* self-report, not the current one), the context id (``cx``),
  language (``lg``), the step index and the action space;
* per text field: word unigrams; for the current and previous observations,
  the first observation and the latest outcome also word bigrams and, for
  short tokens (at most :data:`SHORT` characters: codes, cells, numbers), each
  character with its position and the preceding word (``"at|0:d"``,
  ``"at|1:4"`` for "at D4"), so coordinates and counts are visible as parts, in
  whichever language surrounds them; for the current observation and the
  latest outcome also character 3-grams of longer words (morphology).

String features (:func:`string_features`) embed an action or a goal string: the
whole string, its characters by position and its character 3-grams.

Hashes are stable across processes and platforms (BLAKE2b), so a saved model
reads the same buckets everywhere; the bucket counts are part of its config.
"""

from __future__ import annotations

import re
from functools import lru_cache
from hashlib import blake2b

from trb.context import StepContext

__all__ = ["SHORT", "HISTORY", "context_features", "string_features", "stable_hash", "tokens"]

#: Tokens up to this many characters are also featurised character by character.
SHORT = 4
#: Steps of history, counted back from the current one, whose actions are features.
HISTORY = 3

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1 << 18)
def stable_hash(feature: str) -> int:
    """A 64-bit hash of ``feature`` that is the same in every process (unlike ``hash``)."""
    return int.from_bytes(blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _text_features(prefix: str, text: str, level: int) -> list[str]:
    """Features of one text field: words (level 0); + bigrams and short-token characters (1); + 3-grams (2)."""
    toks = tokens(text)
    out = []
    prev = "^"
    for tok in toks:
        out.append(f"{prefix}w:{tok}")
        if level >= 1:
            out.append(f"{prefix}b:{prev}_{tok}")
            if len(tok) <= SHORT:
                out.extend(f"{prefix}x:{prev}|{i}:{ch}" for i, ch in enumerate(tok))
            if level >= 2 and len(tok) > 2:
                padded = f"<{tok}>"
                out.extend(f"{prefix}c:{padded[i:i + 3]}" for i in range(len(padded) - 2))
        prev = tok
    return out


@lru_cache(maxsize=65536)
def _hashed_text(prefix: str, text: str, level: int, buckets: int) -> tuple[int, ...]:
    return tuple(stable_hash(f) % buckets for f in _text_features(prefix, text, level))


@lru_cache(maxsize=65536)
def _hashed(feature: str, buckets: int) -> int:
    return stable_hash(feature) % buckets


def _slot_value(prefix: str, value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, bool):
        return [f"{prefix}={value}"]
    if isinstance(value, (int, float)):
        return [f"{prefix}~{min(9, max(0, int(float(value) * 10)))}"]  # probability in tenths
    s = str(value)
    out = [f"{prefix}={s}"]
    if len(s) <= SHORT:
        out.extend(f"{prefix}|{i}:{ch}" for i, ch in enumerate(s.lower()))
    return out


def context_features(context: StepContext, buckets: int) -> list[int]:
    """Hashed feature ids (``0 <= id < buckets``) of ``context``, never reading ``context.r``."""
    ids: list[int] = []
    hist = context.history
    if context.observation is not None:
        ids.extend(_hashed_text("o:", context.observation, 2, buckets))
    first = hist[0].observation if hist else context.observation
    if first:
        ids.extend(_hashed_text("f:", first, 1, buckets))
    if hist:
        last = hist[-1]
        ids.extend(_hashed_text("po:", last.observation or "", 1, buckets))
        if last.outcome:
            ids.extend(_hashed_text("oc:", last.outcome, 2, buckets))
        if last.r:
            for slot in ("goal", "planned_next", "caused_by_self", "confidence"):
                ids.extend(_hashed(f, buckets) for f in _slot_value(f"pr:{slot}", last.r.get(slot)))
    for k in range(1, HISTORY + 1):
        if len(hist) >= k:
            ids.append(_hashed(f"a{k}={hist[-k].action}", buckets))
            if k > 1 and hist[-k].outcome:
                ids.extend(_hashed_text(f"oc{k}:", hist[-k].outcome, 0, buckets))
    if context.context_id:
        ids.extend(_hashed_text("cx:", context.context_id, 0, buckets))
    if context.language:
        ids.append(_hashed(f"lg={context.language}", buckets))
    ids.append(_hashed(f"t={min(context.t, 30)}", buckets))
    if context.action_space is None:
        ids.append(_hashed("open-ended", buckets))
    else:
        ids.extend(_hashed(f"as={a}", buckets) for a in context.action_space)
    ids.append(_hashed("bias", buckets))
    return ids


@lru_cache(maxsize=65536)
def string_features(value: str, buckets: int) -> tuple[int, ...]:
    """Hashed feature ids of a slot string (an action or a goal): whole string, characters, 3-grams."""
    feats = [f"s={value}"]
    low = value.lower()
    feats.extend(f"{i}:{ch}" for i, ch in enumerate(low[:8]))
    padded = f"<{low}>"
    feats.extend(f"c:{padded[i:i + 3]}" for i in range(max(0, len(padded) - 2)))
    return tuple(stable_hash(f) % buckets for f in feats)
