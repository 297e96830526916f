"""What each of Label Studio's answers must look like, checked where the client reads it.

An answer that is not Label Studio's (a proxy's HTML page, an empty body, ``{"foo": 1}`` where a
list of tasks was expected, a 200 carrying ``{"error": ...}``) raises
:class:`toolkit.server_answers.UnexpectedAnswer`, which :meth:`annotate.client.LabelStudioClient.call`
turns into :class:`annotate.errors.LabelStudioBadAnswer` naming the server and the request. So push,
pull and status only ever see values of the shapes below: every field they read is there, of its type.
"""

from __future__ import annotations

from typing import Any

from toolkit.server_answers import UnexpectedAnswer, describe, expect

__all__ = ["annotation_id", "exported_tasks", "import_ids", "json_object", "project", "projects_page", "task_count",
           "tasks_page", "users"]


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _whole_or_none(v: Any) -> bool:
    return v is None or _whole(v)


def _text_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _each(items: list, check, what: str) -> None:
    """``check(item)`` is true for every item, else the first that is not, by index."""
    for i, item in enumerate(items):
        if not check(item):
            raise UnexpectedAnswer(f"item {i} is {describe(item)}, not {what}")


def json_object(j: Any, expected: str = "a JSON object") -> dict:
    expect(isinstance(j, dict), j, expected)
    return j


def _is_project(p: Any) -> bool:
    return (isinstance(p, dict) and _whole(p.get("id")) and isinstance(p.get("title"), str)
            and _text_or_none(p.get("label_config")) and _text_or_none(p.get("description"))
            and _whole_or_none(p.get("maximum_annotations")) and _whole_or_none(p.get("task_number"))
            and _text_or_none(p.get("created_at")))


def project(p: Any) -> dict:
    """A project: an object with a whole ``id`` and a text ``title`` (and, when present, a text label config and
    description, whole overlap and task count)."""
    expect(_is_project(p), p, "a project (an object with a whole 'id' and a text 'title')")
    return p


def projects_page(j: Any) -> tuple[list[dict], bool]:
    """(the projects of a page of ``GET /api/projects``, whether there is a next page)."""
    results = j.get("results") if isinstance(j, dict) else j
    expect(isinstance(results, list), j, "a list of projects (or an object with 'results')")
    _each(results, _is_project, "a project (an object with a whole 'id' and a text 'title')")
    return results, isinstance(j, dict) and bool(j.get("next"))


def _is_task(t: Any) -> bool:
    return (isinstance(t, dict) and _whole(t.get("id")) and (t.get("data") is None or isinstance(t.get("data"), dict))
            and _whole_or_none(t.get("total_annotations")) and _whole_or_none(t.get("cancelled_annotations")))


def tasks_page(j: Any) -> list[dict]:
    """The tasks of a page of ``GET /api/tasks``: objects with a whole ``id`` and, when present, a ``data`` object and
    whole annotation counts."""
    tasks = j.get("tasks") if isinstance(j, dict) else j
    expect(isinstance(tasks, list), j, "a list of tasks (or an object with 'tasks')")
    _each(tasks, _is_task, "a task (an object with a whole 'id')")
    return tasks


def task_count(j: Any, field: str) -> int:
    """A whole number ``field`` (``total``, ``total_annotations``) of a task list's answer; 0 when absent."""
    json_object(j, "a list of tasks (an object with 'tasks')")
    value = j.get(field)
    expect(_whole_or_none(value), j, f"a whole number '{field}'")
    return value or 0


def _is_annotation(a: Any) -> bool:
    return (isinstance(a, dict) and _whole(a.get("id")) and isinstance(a.get("result") or [], list)
            and all(isinstance(r, dict) for r in a.get("result") or [])
            and (a.get("completed_by") is None or _whole(a.get("completed_by"))
                 or (isinstance(a.get("completed_by"), dict) and _whole_or_none(a["completed_by"].get("id")))))


def exported_tasks(j: Any) -> list[dict]:
    """The tasks of a JSON export: each a task whose ``annotations`` (when present) are objects with a whole ``id``,
    a list of result objects and an annotator (a user id or object)."""
    expect(isinstance(j, list), j, "a list of exported tasks")
    _each(j, _is_task, "a task (an object with a whole 'id')")
    for t in j:
        options = (t.get("data") or {}).get("action_options")
        if options is not None and not (isinstance(options, list) and all(
                isinstance(o, str) or (isinstance(o, dict) and "value" in o) for o in options)):
            raise UnexpectedAnswer(f"task {t['id']}'s action_options are {describe(options)}, not a list of options")
        anns = t.get("annotations") or []
        if not isinstance(anns, list):
            raise UnexpectedAnswer(f"task {t['id']}'s annotations are {describe(anns)}, not a list")
        for a in anns:
            if not _is_annotation(a):
                raise UnexpectedAnswer(f"an annotation of task {t['id']} is {describe(a)}, not an annotation (an "
                                       "object with a whole 'id', a list 'result' and 'completed_by')")
    return j


def users(found: Any) -> dict[int, str]:
    """User id -> e-mail from the SDK's list of users (objects with a whole ``id`` and a text ``email``)."""
    expect(isinstance(found, list), [_fields(u) for u in found] if isinstance(found, list) else _fields(found),
           "a list of users")
    _each(found, lambda u: _whole(getattr(u, "id", None)) and _text_or_none(getattr(u, "email", None)),
          "a user (with a whole 'id' and an 'email')")
    return {u.id: u.email for u in found}


def _fields(answer: Any) -> Any:
    """The SDK's answer object as the JSON it was made from (for saying what it was)."""
    dump = getattr(answer, "model_dump", None)
    return dump(exclude_unset=True) if callable(dump) else answer  # the fields the answer had, not every default


def import_ids(answer: Any, n: int) -> list[int]:
    """The ids of the ``n`` tasks an import made (the SDK's answer's ``task_ids``: one whole id per task sent)."""
    ids = getattr(answer, "task_ids", None)
    expect(isinstance(ids, list) and len(ids) == n and all(_whole(i) for i in ids), _fields(answer),
           f"the ids of the {n} task(s) imported ('task_ids')")
    return ids


def annotation_id(answer: Any) -> int:
    """The id of a new annotation (the SDK's answer's ``id``)."""
    value = getattr(answer, "id", None)
    expect(_whole(value), _fields(answer), "the new annotation (with a whole 'id')")
    return value
