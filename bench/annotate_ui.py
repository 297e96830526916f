"""An annotator's task in the real Label Studio UI, before and after issue 13: `python bench/annotate_ui.py`.

One run, one Label Studio server, one headless Chromium at 1,280 x 810 CSS px (the window the issue measured):

- **Scrolling before the question**, on the longest attribution task of the demo's corpus (`trb-demo`'s 600
  simulated sessions, seed 1, and 7f3a): the item is pushed twice, as trb-annotate 0.1 rendered it with its
  config (the peer, `bench/annotate_v1.py`) and as push renders it now. Figures: the height of the session
  text, and the pixels the annotator must scroll before the caused_by_self choices are in view.
- **Actions per task**: a scripted annotator answers the task in each project ("the agent", endorsed): it
  scrolls with the mouse wheel (400 px a notch) until the choices are in view, clicks, and submits; every
  notch, click and submit counts.
- **What pull does with what annotators typed**: five submissions an annotator can make (empty, a note with
  no answer, text on a step with an action list but no action, an action with a note beside it, a skip)
  are made in the current projects and read by trb-annotate 0.1's parser (the peer) and by today's pull.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
WINDOW = {"width": 1280, "height": 810}
NOTCH = 400
OLD_CONFIG = ROOT / "tests" / "annotate" / "data" / "attribution-config-v1.xml"

#: where the first caused_by_self choice is, relative to the window, and the session text's height
_MEASURE = """() => {
  const span = [...document.querySelectorAll('span')].find(e => /^(self|The agent)/.test(e.textContent.trim())
                                                             && e.querySelector('sup, b') !== null
                                                             || e.textContent.trim() === 'self');
  const session = [...document.querySelectorAll('.lsf-richtext')][0];
  const r = span.getBoundingClientRect();
  return {bottom: r.bottom, height: session ? session.scrollHeight : null, view: window.innerHeight};
}"""


def _corpus(work: Path):
    from corpus import Corpus, ingest, init_corpus
    from corpus.examples import example_path
    from corpus.simulate import write_simulation
    from pipeline.demo import DEMO_SESSIONS

    sim = work / "sim.jsonl.gz"
    write_simulation(sim, n_sessions=DEMO_SESSIONS, seed=1, progress=False)
    c = Corpus(init_corpus(work / "corpus"))
    ingest(c, [sim, example_path("7f3a")], progress=False)
    return c


def _page(browser, url):
    from ls_server import PASSWORD, USER

    page = browser.new_context(viewport=WINDOW).new_page()
    page.goto(f"{url}/user/login")
    page.fill("input[name=email]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    return page


def _answer(page, url, project_id, choice_text) -> dict:
    """Open the label stream, measure, then answer as a scripted annotator; the figures and the action count."""
    page.goto(f"{url}/projects/{project_id}/data?labeling=1")
    page.wait_for_timeout(3000)
    if page.get_by_text("Labeling Instructions").count():
        page.keyboard.press("Escape")
    page.get_by_text(choice_text, exact=False).last.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    first = page.evaluate(_MEASURE)
    scroll = max(0, math.ceil(first["bottom"] - first["view"]))
    actions = 0
    page.mouse.move(400, 400)
    while page.evaluate(_MEASURE)["bottom"] > first["view"]:
        page.mouse.wheel(0, NOTCH)
        page.wait_for_timeout(150)
        actions += 1
        if actions > 50:
            raise RuntimeError("the choices never came into view")
    page.get_by_text(choice_text, exact=False).last.click()
    actions += 1
    endorsed = page.get_by_text("Endorsed: the agent meant it", exact=False)
    if endorsed.count() and endorsed.last.is_visible():
        endorsed.last.click()
        actions += 1
    else:  # v1 showed the endorsement question always, below the choices
        old = page.get_by_text(re.compile(r"^endorsed"))
        if old.count():
            old.last.scroll_into_view_if_needed()
            old.last.click()
            actions += 1
    page.locator("button:has-text('Submit')").first.click()
    actions += 1
    return {"scroll": scroll, "height": first["height"], "actions": actions}


def _submissions(client, corpus):
    """Five submissions in the current projects; what v1's parser and today's pull make of them."""
    import annotate_v1

    from annotate.pull import pull
    from annotate.push import push
    from annotate.tasks import ITEM_KEY

    att = push(corpus, client, "attribution", title="ui attribution", where="item_id LIKE '7f3a%'")
    cont = push(corpus, client, "continuation", title="ui continuation",
                where="cf_id IN ('7f3a-cf-pair-t0', '7f3a-cf-pair-t3')")
    a_tasks = sorted(client.task_keys(att.project.id, ITEM_KEY).values())
    c_tasks = sorted(client.task_keys(cont.project.id, ITEM_KEY).values())

    def text(name, value, to):
        return {"from_name": name, "to_name": to, "type": "textarea", "value": {"text": [value]}}

    made = [("attribution", a_tasks[0], []), ("attribution", a_tasks[1], [text("rationale", "hm", "session")]),
            ("continuation", c_tasks[0], [text("continuation", "goes on", "context")]),
            ("continuation", c_tasks[1], [{"from_name": "action", "to_name": "context", "type": "choices",
                                           "value": {"choices": ["keep_answer"]}},
                                          text("continuation", "the report said so", "context")])]
    for _, task, result in made:
        client.create_annotation(task, result)
    client.http.post(f"/api/tasks/{a_tasks[2]}/annotations/", json={"result": [], "was_cancelled": True})
    spaces = {c_tasks[0]: ["answer_4", "answer_2", "decline", "ask_clarification"],
              c_tasks[1]: ["check_clock", "report_time", "keep_answer", "ask_clarification"]}
    v1 = {"taken": 0, "skipped without a word": 0, "notes dropped": 0, "text stored as a continuation": 0}
    for kind, task, result in made + [("attribution", a_tasks[2], None)]:
        if result is None:  # v1 skipped cancelled submissions silently
            v1["skipped without a word"] += 1
            continue
        value, _ = annotate_v1.parse_result(kind, result, spaces.get(task))
        if value is None:
            v1["skipped without a word"] += 1
            continue
        v1["taken"] += 1
        typed = any(r["from_name"] in ("continuation", "rationale") for r in result)
        if value["type"] == "action" and typed:
            v1["notes dropped"] += 1
        if value["type"] == "continuation" and spaces.get(task):
            v1["text stored as a continuation"] += 1
    now = [pull(corpus, client, title="ui attribution"), pull(corpus, client, title="ui continuation")]
    return v1, {"taken": sum(r.new for r in now), "listed by task and annotator": sum(len(r.unusable) for r in now),
                "notes kept": sum(r.notes_kept for r in now),
                "dropped without a word": sum(r.seen - r.new - r.unchanged - len(r.unusable) for r in now)}


def main() -> None:
    import tempfile

    import annotate_v1
    from ls import label_studio
    from playwright.sync_api import sync_playwright

    from annotate.push import push
    from annotate.tasks import render_tasks
    from browser import FLAGS, chromium_binary

    with label_studio() as (url, client, work), tempfile.TemporaryDirectory() as tmp:
        corpus = _corpus(Path(tmp))
        with corpus.open(write=False) as con:
            ids = [r[0] for r in con.execute("SELECT item_id FROM store.attribution").fetchall()]
            v1_tasks = {i: annotate_v1.attribution_task(con, i) for i in ids}
        longest = max(ids, key=lambda i: len(v1_tasks[i]["session_text"]))
        old = client.http.post("/api/projects", json={
            "title": "v1 attribution", "label_config": OLD_CONFIG.read_text(), "maximum_annotations": 3,
            "description": "trb-annotate kind=attribution (made by trb-annotate; do not edit)"}).json()
        client.http.post(f"/api/projects/{old['id']}/import", json=[{"data": v1_tasks[longest]}]).raise_for_status()
        new = push(corpus, client, "attribution", title="v2 attribution", where=f"item_id = '{longest}'")
        with corpus.open(write=False) as con:
            [task] = render_tasks(con, "attribution", where=f"item_id = '{longest}'")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_binary(),
                                         args=FLAGS)
            page = _page(browser, url)
            before = _answer(page, url, old["id"], "self")
            after = _answer(page, url, new.project.id, "The agent: its own action")
            browser.close()
        v1, now = _submissions(client, corpus)
    print(f"longest attribution task of the demo corpus: {longest} (step {task['step_label']}); "
          f"window {WINDOW['width']} x {WINDOW['height']}")
    print(f"{'':28} {'before (0.1)':>14} {'after':>10}")
    print(f"{'session text height, px':28} {before['height']:>14} {after['height']:>10}")
    print(f"{'scroll before the question':28} {before['scroll']:>14} {after['scroll']:>10}")
    print(f"{'actions to answer the task':28} {before['actions']:>14} {after['actions']:>10}")
    print("five submissions (empty, a note alone, text with no action, an action with a note, a skip):")
    print(f"  trb-annotate 0.1: {v1}")
    print(f"  now:              {now}")


if __name__ == "__main__":
    main()
