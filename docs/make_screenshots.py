"""`make screenshots`: the README's pictures of the HTML viewer and report, remade.

Builds the sample conversations of the tests (tests/pages.py) in a temporary SQLite
file, writes the pages, and photographs them in headless Chromium (Playwright).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

import convlog
from convlog.html import write_conversation_page, write_report
from tests.pages import story

HERE = Path(__file__).parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        with convlog.open(f"sqlite:///{tmp}/c.db") as log:
            story(log)
            for i, (user, agent) in enumerate([("u2", "claude"), ("u3", "codex")]):
                story(log, f"cli:session:{i}", user=user, agent=agent)
            page_path = write_conversation_page(log, "discord:thread:42", Path(tmp) / "c.html")
            index = write_report(log, Path(tmp) / "report")
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        for source, target in ((page_path, "html-viewer.png"), (index, "html-report.png")):
            page.goto(source.as_uri())
            page.wait_for_selector("body[data-ready=yes]")
            page.screenshot(path=str(HERE / target))
            print(f"wrote docs/{target}")
        browser.close()


if __name__ == "__main__":
    main()
