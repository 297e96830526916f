"""Two annotators' day in the real Label Studio UI, in a real headless Chromium: the instructions show when labelling
starts, the question sits beside the session, every question of both projects is answered through the UI (and
the refusals: question 2 left blank, a note without an action, an open-ended step without text), and ``pull``
finds each answer in the corpus, names what it refuses and ``status`` counts it (servers started by the fixtures).

Figures (printed with -s, and written to bench/out/annotate_browser-<back end>.json): answers given vs labels stored, and the tasks
whose view showed an answer-bearing field."""

import json
from pathlib import Path

import pytest

from annotate.client import connect
from annotate.pull import annotator_id, pull
from annotate.push import push
from annotate.status import status
from annotate.tasks import ITEM_KEY, example_items, item_key
from corpus import Corpus, ingest, init_corpus
from corpus.examples import example_path
from factories import like_7f3a, write_jsonl
from ls_server import signup

pytestmark = [pytest.mark.label_studio, pytest.mark.browser]

PASSWORD = "annotator-pw-123"
ONE = "ui.one@trb.test"
TWO = "ui.two@trb.test"
#: two counterfactuals on steps with an action list, two on open-ended steps (a copy of 7f3a's, not examples)
CFS = ("b2c9-cf-pair-t0", "b2c9-cf-ssr-t0", "b2c9-cf-pair-t2", "b2c9-cf-ssr-t2")
FIGURES = Path(__file__).resolve().parents[2] / "bench" / "out"
#: Text that would carry an answer if shown: the agent's own later view of the outcome beside question 2
#: ("What came next"), and anything naming the item or its design.
ANSWER_BEARING = {".trb-after": ("self-report at this step", "Endorses last output", "belief that it caused"),
                  ".trb-cols": ("b2c9-", "7f3a-attr", "design", "Most annotators chose")}
#: this server's figures (the fixture below starts them afresh for each Label Studio back end)
figures: dict = {}


@pytest.fixture(scope="module")
def setup(ls_server, tmp_path_factory):
    figures.clear()
    figures.update(answers_given=0, refused_in_the_ui=0, tasks_viewed=0, tasks_showing_an_answer_field=0)
    for email in (ONE, TWO):
        signup(ls_server.url, ls_server.token, email, PASSWORD)
    d = tmp_path_factory.mktemp("ui")
    c = Corpus(init_corpus(d / "c"))
    # the 7f3a example (the instructions' examples) and sessions of the same shape that are not examples
    ingest(c, [example_path("7f3a"), write_jsonl(d / "copy.jsonl", like_7f3a())], progress=False)
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    att = push(c, admin, "attribution", title="ui attribution", overlap=2)
    cont = push(c, admin, "continuation", title="ui continuation", overlap=2, where=f"cf_id IN {tuple(CFS)}")
    # no example item is a task: the instructions' examples answer no question asked
    with c.open(write=False) as con:
        for kind, rep in (("attribution", att), ("continuation", cont)):
            pushed = set(admin.task_keys(rep.project.id, ITEM_KEY))
            examples = {item_key(kind, i) for i in example_items(con, kind)}
            assert pushed and examples and not pushed & examples
    assert (att.imported, att.examples, cont.imported) == (3, 3, 4)
    return c, admin, att.project, cont.project


def _log_in(chromium, url, email):
    from browser import VIEWPORT

    context = chromium.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(f"{url}/user/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    return context, page


def _start_stream(page, url, project_id, heading):
    """Label All Tasks: the instructions come first; closed, the first task is there."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{url}/projects/{project_id}/data?labeling=1")
    page.get_by_text("Labeling Instructions").wait_for(timeout=30_000)
    assert page.get_by_text("Work only through", exact=False).first.is_visible()
    modal = page.locator(".lsf-modal-ls_visible")
    for _ in range(5):  # Escape closes it; pressed while it is still opening, it may be missed: press again
        page.keyboard.press("Escape")
        try:
            modal.first.wait_for(state="detached", timeout=3_000)
            break
        except PlaywrightTimeout:  # still open
            continue
    assert modal.count() == 0, "the instructions did not close on Escape"
    page.locator(".trb-question").get_by_text(heading).wait_for(timeout=30_000)


def _close_dialog(page):
    """OK closes Label Studio's message dialog; clicked while it is still opening the click may be missed (the
    dialog then stays over the task): click again until it is gone."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wrap = page.locator(".ant-modal-wrap:visible")
    for _ in range(5):
        ok = page.get_by_role("button", name="OK")
        if ok.count():
            try:
                ok.first.click(timeout=3_000)
            except PlaywrightTimeout:
                pass
        try:
            wrap.first.wait_for(state="detached", timeout=3_000)
            break
        except PlaywrightTimeout:
            if not wrap.count():
                break
    assert wrap.count() == 0, "Label Studio's message dialog did not close on OK"


def _submit_button(page):
    return page.locator("button:has-text('Submit')").first


def _submit(page, marker_selector):
    """Submit, and wait until the next task (or the end of the stream) replaces the one shown."""
    shown = page.locator(marker_selector).inner_text().strip()
    submit = _submit_button(page)
    assert submit.is_enabled()
    submit.click()
    page.wait_for_function(f"() => !document.querySelector({marker_selector!r}) || "
                           f"document.querySelector({marker_selector!r}).innerText.trim() !== {shown!r}",
                           timeout=30_000)
    figures["answers_given"] += 1


def _note(page, name, text):
    box = page.locator(f"textarea[name={name}]")
    box.click()
    box.type(text)
    box.press("Shift+Enter")  # typed text counts once added


def _pick(page, text):
    page.locator(".trb-question").get_by_text(text, exact=False).first.click()


def _unobstructed(page, locator, seconds: float = 5) -> bool:
    """The element is in the window and nothing (the bottom bar, a tooltip) lies over its centre, once the view
    has settled (checked until ``seconds`` have passed: the stream may still be laying the task out)."""
    for _ in range(int(seconds / 0.25)):
        if locator.evaluate("""el => { const r = el.getClientRects()[0];  // its first line, when it wraps
            if (!r) return false;
            const x = r.left + r.width / 2, y = r.top + r.height / 2;
            if (y < 0 || y > window.innerHeight || x < 0 || x > window.innerWidth) return false;
            const top = document.elementFromPoint(x, y); return !!top && (top === el || el.contains(top)); }"""):
            return True
        page.wait_for_timeout(250)
    return False


def _audit_view(page):
    """Count the task when its view shows an answer-bearing field (see ANSWER_BEARING)."""
    figures["tasks_viewed"] += 1
    for selector, needles in ANSWER_BEARING.items():
        for el in page.locator(selector).all():
            text = el.inner_text()
            if any(n in text for n in needles):
                figures["tasks_showing_an_answer_field"] += 1
                return


def _attribution_task(page, q1, q2=None, note=None, refuse_blank_q2=False):
    page.locator(".trb-outcome").wait_for()
    question = page.locator(".trb-question")
    box = question.get_by_text("1. Who caused this outcome?").bounding_box()
    assert box["y"] + box["height"] <= page.viewport_size["height"]  # in view, no scrolling
    assert _submit_button(page).is_disabled()  # nothing answered: nothing to submit (the header says required)
    assert question.get_by_text("2. Did the agent endorse", exact=False).is_hidden()  # not until it applies
    _pick(page, q1)
    if q1.startswith("The agent"):
        question.get_by_text("2. Did the agent endorse", exact=False).wait_for()
        # the note box and its Add button stay in view above the bottom bar, nothing over the outcome
        assert _unobstructed(page, question.locator("textarea[name=rationale]"))
        add = question.locator("button:has-text('Add')")
        assert _unobstructed(page, add)
        clearance = add.evaluate("""el => { const bar = document.querySelector('.lsf-bottombar');
            return Math.round((bar ? bar.getBoundingClientRect().top : window.innerHeight)
                              - el.getBoundingClientRect().bottom); }""")
        figures["add_clearance_px"] = min(figures.get("add_clearance_px", clearance), clearance)
        assert clearance >= 0  # Add lies wholly above the bottom bar
        assert _unobstructed(page, question.get_by_text("Not endorsed: produced", exact=False))  # question 2 too
        # the question column ends above the bottom bar: what does not fit scrolls inside it, never under the bar
        assert question.evaluate("""el => { const bar = document.querySelector('.lsf-bottombar');
            return !bar || el.getBoundingClientRect().bottom <= bar.getBoundingClientRect().top; }""")
        assert _unobstructed(page, page.locator(".trb-outcome"))
        _audit_view(page)  # with "What came next" shown
        if refuse_blank_q2:  # question 2 left blank: refused, and the annotator is told which question
            _submit_button(page).click()
            page.get_by_text("Question 2 (did the agent endorse the outcome?) needs an answer").wait_for()
            figures["refused_in_the_ui"] += 1
            _close_dialog(page)
        _pick(page, q2)
    else:
        assert question.get_by_text("2. Did the agent endorse", exact=False).is_hidden()
        _audit_view(page)
    if note:
        _note(page, "rationale", note)
    _submit(page, ".trb-outcome")


def test_attribution_tasks_answered_by_two_annotators_reach_the_corpus(ls_server, chromium, setup):
    corpus, admin, project, _ = setup
    plans = {ONE: [("The agent", "Not endorsed", "said as a demonstration, taken back next", True),
                   ("The agent", "Endorsed", None, False),
                   ("Something outside the agent", None, "the operator reset the clock", False)],
             TWO: [("Can't tell", None, "cannot tell the act from the fact", False),
                   ("The agent", "Endorsed", None, False),
                   ("Something outside the agent", None, None, False)]}
    initials = {}
    for email, plan in plans.items():
        context, page = _log_in(chromium, ls_server.url, email)
        try:
            initials[email] = page.evaluate("() => fetch('/api/current-user/whoami').then(r => r.json())")["initials"]
            _start_stream(page, ls_server.url, project.id, "1. Who caused this outcome?")
            # hovering a choice shows no tooltip over the outcome
            page.locator(".trb-question").get_by_text("Can't tell", exact=False).first.hover()
            page.wait_for_timeout(800)
            assert _unobstructed(page, page.locator(".trb-outcome"))
            assert page.evaluate("""() => { const q = document.querySelector('.trb-question').getBoundingClientRect();
                return [...document.querySelectorAll('[role=tooltip], [class*=tooltip]')].filter(e => {
                    const r = e.getBoundingClientRect(), st = getComputedStyle(e);
                    return !e.className.toString().includes('wrapper') && r.width && st.visibility !== 'hidden'
                        && st.opacity !== '0' && r.left < q.right && r.right > q.left && r.top < q.bottom
                        && r.bottom > q.top; }).length; }""") == 0  # no tooltip over the question column
            for q1, q2, note, refuse in plan:
                _attribution_task(page, q1, q2, note, refuse)
        finally:
            context.close()
    assert initials[ONE] != initials[TWO], initials  # two avatars that tell the annotators apart

    report = pull(corpus, admin, title="ui attribution")
    assert (report.new, report.unusable, report.notes_kept) == (6, [], 3)
    with corpus.open(write=False) as con:
        rows = con.execute("SELECT annotator_id, label, endorsed, rationale FROM store.annotations "
                           "WHERE target_kind = 'attribution' AND ls_project_id IS NOT NULL").fetchall()
    given = sorted((annotator_id(e), {"The agent": "self", "Something outside the agent": "exogenous",
                                      "Can't tell": "unsure"}[q1],
                    None if q2 is None else q2 == "Endorsed", note) for e, plan in plans.items()
                   for q1, q2, note, _ in plan)
    assert sorted(rows, key=str) == sorted(given, key=str)
    assert all(endorsed is not None for _, label, endorsed, _ in rows if label == "self")  # none without q2
    figures["attribution"] = {"answers_given": len(given), "labels_stored": len(rows),
                              "self_without_endorsement": sum(1 for r in rows if r[1] == "self" and r[2] is None)}


def _continuation_task(page, action=None, text=None, note_only=None):
    page.locator(".trb-report").wait_for()
    _audit_view(page)
    assert _submit_button(page).is_disabled()
    assert _unobstructed(page, page.locator(".trb-question button:has-text('Add')"))  # above the bottom bar
    listed = page.locator(".trb-question").get_by_text("ask clarification", exact=True).count() > 0
    prompt = page.locator(".trb-question").inner_text()
    if not listed:  # open-ended: Submit stays disabled until the text is added, and the view says so
        assert "Submit stays disabled until it is added" in prompt
        box = page.locator("textarea[name=continuation]")
        box.click()
        box.type(text)
        assert _submit_button(page).is_disabled()
        box.press("Shift+Enter")
        _submit(page, ".trb-report")
        return "open", text
    assert "a note without an action is not an answer" in prompt  # the reason, before anyone submits
    if note_only:  # the UI takes it (text counts as something); pull refuses it, naming annotator and task
        _note(page, "continuation", note_only)
        _submit(page, ".trb-report")
        return "note only", note_only
    page.locator(".trb-question").get_by_text(action, exact=True).click()
    if text:
        _note(page, "continuation", text)
    _submit(page, ".trb-report")
    return "list", action


def test_continuation_tasks_answered_by_two_annotators_reach_the_corpus_or_are_refused(ls_server, chromium, setup):
    corpus, admin, _, project = setup
    answers = {}
    for email in (ONE, TWO):
        context, page = _log_in(chromium, ls_server.url, email)
        try:
            _start_stream(page, ls_server.url, project.id, "What does an agent holding this self-report do next?")
            seen_list = 0
            for _ in CFS:
                page.locator(".trb-report").wait_for()
                listed = page.locator(".trb-question").get_by_text("ask clarification", exact=True).count() > 0
                if listed:
                    seen_list += 1
                    if email == ONE and seen_list == 1:
                        got = _continuation_task(page, note_only="it would decline, I think")
                    else:
                        got = _continuation_task(page, action="decline" if page.locator(".trb-question").get_by_text(
                            "decline", exact=True).count() else "ask clarification",
                            text="its goal rules out a false example" if email == TWO else None)
                else:
                    got = _continuation_task(page, text="Hang on, let me look at the clock first.")
                answers.setdefault(email, []).append(got)
        finally:
            context.close()
    assert [k for e in answers for k, _ in answers[e]].count("note only") == 1

    report = pull(corpus, admin, title="ui continuation")
    [refused] = report.unusable
    assert refused.annotator == annotator_id(ONE) and refused.project_id == project.id
    assert refused.why == "text written on a step with an action list, but no action chosen"
    assert f"task {refused.task_id}," in "\n".join(report.lines())
    [st] = [s for s in status(admin) if s.project_id == project.id]
    assert st.annotations == 7 and st.not_taken == {refused.why: 1}
    assert report.new == 7 and report.notes_kept == 2  # TWO's notes beside an action
    with corpus.open(write=False) as con:
        rows = con.execute("SELECT annotator_id, value_type, action, text, rationale FROM store.annotations "
                           "WHERE target_kind = 'counterfactual'").fetchall()
    assert len(rows) == 7
    assert sorted(r[3] for r in rows if r[1] == "continuation") == ["Hang on, let me look at the clock first."] * 4
    assert {r[2] for r in rows if r[1] == "action"} <= {"decline", "ask clarification", "ask_clarification"}
    figures["continuation"] = {"answers_given": 8, "refused_at_pull": len(report.unusable), "labels_stored": len(rows)}


def test_the_figures(setup, request):
    """Answers given vs labels stored, and tasks whose view showed an answer-bearing field (bench/README)."""
    att, cont = figures.get("attribution"), figures.get("continuation")
    if att is None or cont is None:
        pytest.skip("the two browser tests above did not both run")
    stored = att["labels_stored"] + cont["labels_stored"]
    given = att["answers_given"] + cont["answers_given"] - cont["refused_at_pull"]
    out = dict(figures, labels_stored=stored, answers_that_are_labels=given)
    backend = request.node.callspec.id
    FIGURES.mkdir(exist_ok=True)
    (FIGURES / f"annotate_browser-{backend}.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"\nannotate browser figures ({backend}): " + json.dumps(out))
    assert stored == given and att["self_without_endorsement"] == 0
    assert figures["tasks_showing_an_answer_field"] == 0 and figures["tasks_viewed"] == 14
    assert figures["refused_in_the_ui"] == 1  # question 2 left blank, refused by the UI with its reason
