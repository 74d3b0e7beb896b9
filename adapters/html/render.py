"""Rendering with Jinja2: autoescaping on, assets inlined, data as safe JSON.

One environment, built once. Templates and assets are package data read with
importlib.resources, so an installed wheel renders the same page as a source tree.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import convlog

SCRIPTS = ("viewer.js", "report.js", "chart.umd.min.js")
"""Our inline scripts. The page's Content-Security-Policy allows these, by hash, and
nothing else: even a script that got into the page some other way would not run."""

if TYPE_CHECKING:
    import jinja2


class MissingExtra(convlog.ConvlogError):
    """An optional dependency is not installed: the message names the extra."""


@cache
def asset(name: str) -> str:
    """The text of one of our assets (CSS, JavaScript), to inline in a page."""
    return resources.files("convlog.html").joinpath("assets", name).read_text("utf-8")


@cache
def script_hashes() -> str:
    return " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(asset(name).encode()).digest()).decode()
        + "'" for name in SCRIPTS)


@cache
def environment() -> jinja2.Environment:
    try:
        import jinja2
    except ImportError as exc:  # pragma: no cover - the extra is in dev
        raise MissingExtra(
            "HTML pages need Jinja2: pip install 'convlog[html]'") from exc
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("convlog.html", "templates"),
        autoescape=True,  # every template: user text is escaped wherever it lands
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
    )
    from markupsafe import Markup as markup  # Jinja2's own dependency
    env.globals["asset"] = lambda name: markup(asset(name))
    env.globals["script"] = lambda name: markup(f"<script>{asset(name)}</script>")
    env.globals["script_hashes"] = markup(script_hashes())
    return env


def render(template: str, **context: Any) -> str:
    """`tojson` in the templates escapes <, >, & and ' inside JSON, so a message
    holding `</script>` cannot end the data block it is carried in."""
    return environment().get_template(template).render(**context)
