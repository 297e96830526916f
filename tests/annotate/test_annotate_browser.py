"""An annotator's day in the real Label Studio UI, in a real headless Chromium: the instructions show when
labelling starts, the question sits beside the session, a task of each project is answered through the UI
and submitted, and ``pull`` finds each answer in the corpus (servers started by the fixtures)."""

import pytest

from annotate.client import connect
from annotate.pull import annotator_id, pull
from annotate.push import push
from corpus import Corpus, ingest, init_corpus
from corpus.examples import example_path
from ls_server import signup

pytestmark = [pytest.mark.label_studio, pytest.mark.browser]

PASSWORD = "annotator-pw-123"
ONE = "ui.one@trb.test"
TWO = "ui.two@trb.test"
#: one counterfactual on a step with an action list, one on an open-ended step (7f3a)
CFS = ("7f3a-cf-pair-t0", "7f3a-cf-ssr-t2")


@pytest.fixture(scope="module")
def setup(ls_server, tmp_path_factory):
    for email in (ONE, TWO):
        signup(ls_server.url, ls_server.token, email, PASSWORD)
    c = Corpus(init_corpus(tmp_path_factory.mktemp("ui") / "c"))
    ingest(c, [example_path("7f3a")], progress=False)
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    att = push(c, admin, "attribution", title="ui attribution", overlap=2)
    cont = push(c, admin, "continuation", title="ui continuation", overlap=2,
                where=f"cf_id IN {tuple(CFS)}")
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
    page.goto(f"{url}/projects/{project_id}/data?labeling=1")
    page.get_by_text("Labeling Instructions").wait_for(timeout=30_000)
    assert page.get_by_text("Work only through", exact=False).first.is_visible()
    page.keyboard.press("Escape")
    page.locator(".trb-question").get_by_text(heading).wait_for(timeout=30_000)


def _submit(page):
    submit = page.locator("button:has-text('Submit')").first
    assert submit.is_enabled()
    submit.click()


def _note(page, name, text):
    box = page.locator(f"textarea[name={name}]")
    box.click()
    box.type(text)
    box.press("Shift+Enter")  # typed text counts once added


def _outcome_shown(page) -> str:
    return page.locator(".trb-outcome").inner_text().strip()


def test_an_attribution_task_answered_in_the_browser_reaches_the_corpus(ls_server, chromium, setup):
    corpus, admin, project, _ = setup
    context, page = _log_in(chromium, ls_server.url, ONE)
    try:
        _start_stream(page, ls_server.url, project.id, "1. Who caused this outcome?")
        # the question is in view beside the session, without scrolling; nothing answered, nothing to submit
        box = page.locator(".trb-question").get_by_text("1. Who caused this outcome?").bounding_box()
        assert box["y"] + box["height"] <= page.viewport_size["height"]
        assert page.locator("button:has-text('Submit')").first.is_disabled()
        assert page.locator(".trb-question").get_by_text("2. Did the agent endorse", exact=False).is_hidden()  # not until it applies
        shown = _outcome_shown(page)
        page.locator(".trb-question").get_by_text("The agent: its own action", exact=False).click()
        page.locator(".trb-question").get_by_text("2. Did the agent endorse", exact=False).wait_for()
        assert page.locator(".trb-question").get_by_text("What came next", exact=False).is_visible()
        page.locator(".trb-question").get_by_text("Not endorsed: produced", exact=False).click()
        _note(page, "rationale", "said as a demonstration, taken back next")
        _submit(page)
        page.wait_for_function("() => !document.querySelector('.trb-outcome') || "
                               f"!document.querySelector('.trb-outcome').innerText.includes({shown[:40]!r})",
                               timeout=30_000)
    finally:
        context.close()

    # a second annotator answers "outside": the endorsement question never shows
    context, page = _log_in(chromium, ls_server.url, TWO)
    try:
        _start_stream(page, ls_server.url, project.id, "1. Who caused this outcome?")
        shown_two = _outcome_shown(page)
        page.locator(".trb-question").get_by_text("Something outside the agent", exact=False).click()
        assert page.locator(".trb-question").get_by_text("2. Did the agent endorse", exact=False).is_hidden()
        _submit(page)
        page.wait_for_function("() => !document.querySelector('.trb-outcome') || "
                               f"!document.querySelector('.trb-outcome').innerText.includes({shown_two[:40]!r})",
                               timeout=30_000)
    finally:
        context.close()

    report = pull(corpus, admin, title="ui attribution")
    assert (report.new, report.unusable) == (2, [])
    with corpus.open(write=False) as con:
        rows = con.execute("""
            SELECT a.annotator_id, a.label, a.endorsed, a.rationale, s.outcome FROM store.annotations a
            JOIN store.attribution i ON i.item_id = a.target_id
            JOIN store.steps s ON s.session_id = i.session_id AND s.t = i.t ORDER BY a.annotator_id""").fetchall()
    got = {r[0]: r[1:] for r in rows}
    assert got[annotator_id(ONE)] == ("self", False, "said as a demonstration, taken back next", shown)
    assert got[annotator_id(TWO)] == ("exogenous", None, None, shown_two)


def test_continuation_tasks_answered_in_the_browser_reach_the_corpus(ls_server, chromium, setup):
    corpus, admin, _, project = setup
    context, page = _log_in(chromium, ls_server.url, ONE)
    answered = {}
    try:
        _start_stream(page, ls_server.url, project.id, "What does an agent holding this self-report do next?")
        for _ in CFS:
            report_text = page.locator(".trb-report").inner_text().strip()
            assert page.locator("button:has-text('Submit')").first.is_disabled()
            if page.locator(".trb-question").get_by_text("decline", exact=True).count():  # the step with a list: readable action names
                assert page.locator(".trb-question").get_by_text("ask clarification", exact=True).count() == 1
                page.locator(".trb-question").get_by_text("decline", exact=True).click()
                _note(page, "continuation", "its goal rules out a false example")
                answered["list"] = report_text
            else:  # open-ended: the agent's own words
                _note(page, "continuation", "Hang on, let me look at the clock first.")
                answered["open"] = report_text
            _submit(page)
            page.wait_for_function("() => !document.querySelector('.trb-report') || "
                                   f"document.querySelector('.trb-report').innerText.trim() !== {report_text!r}",
                                   timeout=30_000)
    finally:
        context.close()
    assert set(answered) == {"list", "open"}

    report = pull(corpus, admin, title="ui continuation")
    assert (report.new, report.notes_kept, report.unusable) == (2, 1, [])
    with corpus.open(write=False) as con:
        rows = dict((r[0], r[1:]) for r in con.execute(
            "SELECT target_id, value_type, action, text, rationale, annotator_id FROM store.annotations "
            "WHERE target_kind = 'counterfactual' ORDER BY 1").fetchall())
    assert rows["7f3a-cf-pair-t0"] == ("action", "decline", None, "its goal rules out a false example",
                                       annotator_id(ONE))
    assert rows["7f3a-cf-ssr-t2"] == ("continuation", None, "Hang on, let me look at the clock first.", None,
                                      annotator_id(ONE))
    assert "avoid saying anything false" in answered["list"] and "look at the clock" in answered["open"]
