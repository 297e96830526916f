"""The TRB report: the profile vector per baseline and Δgov, from a results store.

Spec §5, enforced here:

* **The profile is a vector.** Each track is reported on its own, with its own
  interval; nothing in this package combines scores of different tracks.
* **Δgov = G(trace-full) − G(trace-ablation)**, paired item by item and given with a
  session-bootstrap confidence interval whenever both runs exist on the release;
  otherwise ``delta_gov`` is ``null`` and ``delta_gov_note`` says why.
* **Honest labelling.** A run on a smoke release is "SMOKE TEST — not a TRB score"
  in every format (JSON banner, Markdown first line, HTML banner, plot title).
  Every format names the TRB version, the release SHA and each baseline's adapter tier.

Intervals come from :mod:`trb.stats` (percentile bootstrap, sessions resampled).

The modules: :mod:`~trb.report.build` (the report's data, from the store), :mod:`~trb.report.profile` (one
run's figures), :mod:`~trb.report.comparisons` (Δgov and the pass bars), :mod:`~trb.report.vector` (the profile
vector), :mod:`~trb.report.markdown`, :mod:`~trb.report.html_page` and :mod:`~trb.report.figures` (the formats),
:mod:`~trb.report.text` (the words both formats share) and :mod:`~trb.report.sections` (what each track adds,
through the track registry: Track 2's sections in :mod:`trb.tracks.track2_report`, Track 6 in
:mod:`trb.tracks.track6`).
"""

from trb.report.build import build_report, render_json, runs_on_release, unfinished_text
from trb.report.common import BASELINE_ORDER, HELD_OUT_SPLITS, SMOKE_BANNER, format_score
from trb.report.figures import plot_profiles, plot_tracks
from trb.report.html_page import render_html
from trb.report.markdown import render_markdown
from trb.report.profile import run_profile
from trb.report.vector import PROFILE_VECTOR
from trb.tracks.track2 import PROXY_GROUNDING

__all__ = [
    "BASELINE_ORDER",
    "HELD_OUT_SPLITS",
    "format_score",
    "run_profile",
    "runs_on_release",
    "unfinished_text",
    "SMOKE_BANNER",
    "build_report",
    "plot_profiles",
    "plot_tracks",
    "PROFILE_VECTOR",
    "PROXY_GROUNDING",
    "render_html",
    "render_json",
    "render_markdown",
]
