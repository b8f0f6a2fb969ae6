"""Lighthouse (mobile, its default) on the example portal's home, a note, the table of contents and a results page
(issue 45): accessibility, best practices and SEO 100, performance at least 95 and a cumulative layout shift of at
most 0.02 — no shift from the tree, the drawer, the filter box or fonts. Lighthouse 12.2.3 (npm, pinned in
tests/a11y/package.json) drives Debian's Chromium (``CHROME_PATH``); each page three times: every run must score
100 on the three, the median performance must reach 95, and no run may shift more than 0.02. The figures are
printed, and recorded in docs/QUALITY.md ("Accessibility and weight").

    python -m pytest -n 0 -m slow -s tests/test_lighthouse.py      # after: npm ci --prefix tests/a11y
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from urllib.parse import quote

import pytest

from tests.a11y_support import QUERY, example_portal, require_lighthouse
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, require_browser

pytestmark = pytest.mark.slow

PAGES = {"home": "/index.html", "note": "/notes/recepty/teh-tarik.html", "toc": "/notes/index.html",
         "results": f"/search?q={quote(QUERY)}"}
RUNS = 3
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")


@pytest.fixture(scope="module")
def portal(tmp_path_factory):
    require_browser()
    require_lighthouse()
    yield from example_portal(tmp_path_factory.mktemp("lighthouse"))


def lighthouse(url: str) -> dict:
    """One Lighthouse run (mobile): each category's score, CLS, and the audits that lost points."""
    from tests.a11y_support import LIGHTHOUSE

    flags = " ".join(["--headless=new", *CHROMIUM_ARGS])
    done = subprocess.run(["node", str(LIGHTHOUSE), url, "--quiet", "--output=json", "--output-path=stdout",
                           f"--only-categories={','.join(CATEGORIES)}", f"--chrome-flags={flags}"],
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "CHROME_PATH": str(CHROMIUM)})
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    lost = [f"{ref['id']} {report['audits'][ref['id']]['score']}" for category in report["categories"].values()
            for ref in category["auditRefs"] if ref["weight"] > 0
            and report["audits"][ref["id"]]["score"] is not None and report["audits"][ref["id"]]["score"] < 1]
    return {"scores": {name: round(report["categories"][name]["score"] * 100) for name in CATEGORIES},
            "cls": report["audits"]["cumulative-layout-shift"]["numericValue"],
            "lcp_ms": report["audits"]["largest-contentful-paint"]["numericValue"], "lost": lost}


@pytest.mark.parametrize("kind", list(PAGES))
def test_lighthouse_scores(portal, kind):
    runs = [lighthouse(portal + PAGES[kind]) for _ in range(RUNS)]
    performance = statistics.median(run["scores"]["performance"] for run in runs)
    worst_cls = max(run["cls"] for run in runs)
    print(json.dumps({kind: {"performance (median)": performance, "performance": [r["scores"]["performance"]
                                                                                    for r in runs],
                             **{name: [r["scores"][name] for r in runs] for name in CATEGORIES[1:]},
                             "CLS (worst)": round(worst_cls, 4),
                             "LCP ms": [round(r["lcp_ms"]) for r in runs]}}, ensure_ascii=False))
    for run in runs:
        assert {name: run["scores"][name] for name in CATEGORIES[1:]} == dict.fromkeys(CATEGORIES[1:], 100), run
    assert performance >= 95, runs
    assert worst_cls <= 0.02, runs
