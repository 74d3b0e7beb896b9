"""The HTML viewer at size: build time, page weight, and how it behaves in a browser.

Run with ``.venv/bin/python -m bench.html [--quick]`` (``make bench`` runs it). For
conversations of 1,000 and 10,000 messages (quick: 500 and 2,000) it measures, in
one run: the time to write the page (`convlog html`), its size, then in headless
Chromium (Playwright) the time from navigation to the page being ready, the time of
a page flip (the "older" button: a new slice of the view rendered), and the time of a
scroll through the rendered page; medians over repeats. How cost grows with size is
the ratio of the large conversation's figure to the small one's: the views render a
page at a time, so only parsing the embedded data should grow with the length.
Results go to ``bench/results/html-<UTC date>[-quick].json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

import convlog
from bench import meta
from convlog.html import write_conversation_page
from convlog.services.log import application

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def build(directory: Path, messages: int) -> tuple[Path, float]:
    with convlog.open(f"sqlite:///{directory / f'{messages}.db'}",
                      preload_tokenizer=False) as log:
        conv = log.conversation("long", user="u", agent="copilot", title="long")
        for start in range(0, messages, 500):
            conv.append_turn([
                (convlog.user if i % 2 == 0 else convlog.assistant)(
                    f"message {i}: " + "lorem ipsum dolor " * 10, tokens=30)
                for i in range(start, min(start + 500, messages))])
        application(log).catalog.refresh()
        started = time.perf_counter()
        path = write_conversation_page(log, "long", directory / f"{messages}.html")
        return path, time.perf_counter() - started


def in_browser(browser, path: Path, repeats: int) -> dict[str, float]:
    loads, flips, scrolls = [], [], []
    for _ in range(repeats):
        context = browser.new_context(viewport={"width": 1300, "height": 900})
        page = context.new_page()
        started = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready=yes]")
        loads.append(time.perf_counter() - started)
        older = page.locator(".pager[data-for=user] button", has_text="older")
        for _ in range(5):
            started = time.perf_counter()
            older.click()
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
            flips.append(time.perf_counter() - started)
        scrolls.append(page.evaluate("""async () => {
            const t0 = performance.now();
            for (let y = 0; y < document.body.scrollHeight; y += 800) {
                window.scrollTo(0, y);
                await new Promise(r => requestAnimationFrame(r));
            }
            return (performance.now() - t0) / 1000; }"""))
        context.close()
    return {"load_s": statistics.median(loads), "flip_s": statistics.median(flips),
            "scroll_s": statistics.median(scrolls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (< 1 minute)")
    args = parser.parse_args()
    stamp = meta.begin("html", args.quick)
    sizes, repeats = ((500, 2_000), 3) if args.quick else ((1_000, 10_000), 5)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        for size in sizes:
            path, build_s = build(Path(tmp), size)
            results[str(size)] = {"build_s": build_s, "bytes": path.stat().st_size,
                                  **in_browser(browser, path, repeats)}
        browser.close()
    small, large = (results[str(s)] for s in sizes)
    print(f"HTML viewer: medians of {repeats} page loads, 5 page flips each\n")
    print(f"{'messages':>9} | {'write page':>10} | {'page size':>10} | {'load':>8} | "
          f"{'page flip':>9} | {'scroll page':>11}")
    for size in sizes:
        r = results[str(size)]
        print(f"{size:>9,} | {r['build_s'] * 1000:>7.0f} ms | {r['bytes'] / 1e6:>7.2f} MB | "
              f"{r['load_s'] * 1000:>5.0f} ms | {r['flip_s'] * 1000:>6.1f} ms | "
              f"{r['scroll_s'] * 1000:>8.0f} ms")
    growth = {k: large[k] / small[k] for k in ("build_s", "bytes", "load_s", "flip_s")}
    print(f"\ngrowth {sizes[1]:,} / {sizes[0]:,} messages: " + ", ".join(
        f"{k} {v:.1f}x" for k, v in growth.items()))
    flat = growth["flip_s"] <= 2.0
    print(f"target: a page flip does not grow with the conversation (<= 2x): "
          f"{'met' if flat else 'MISSED'}")
    path = stamp.save({"sizes": sizes, "repeats": repeats, "results": results,
                       "growth": growth})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
