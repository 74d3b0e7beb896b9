"""`convlog telemetry --chart FILE.png`: resume success rate per strategy over time.

matplotlib is an optional extra (``pip install 'convlog[charts]'``): the core library
does not need it. Buckets are days, or hours when all data fall within two days.
The PNG is written to a temporary file and renamed, so a reader never sees half.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from convlog.domain.errors import ConvlogError

SERIES_SQL = """
    WITH a AS (SELECT "at", strategy, outcome FROM resume_attempts
               WHERE outcome <> 'abandoned'),
    span AS (SELECT max("at") - min("at") < INTERVAL 2 DAY AS short FROM a)
    SELECT date_trunc(CASE WHEN (SELECT short FROM span) THEN 'hour' ELSE 'day' END, "at")
               AS bucket,
           strategy, count(*) FILTER (WHERE outcome = 'succeeded') / count(*) AS rate,
           count(*) AS attempts
    FROM a GROUP BY ALL ORDER BY bucket, strategy"""


def render(rows: list[tuple[datetime, str, float, int]], path: Path) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
        from matplotlib.axes import Axes
    except ImportError:
        raise ConvlogError("charts need matplotlib: pip install 'convlog[charts]'") from None
    if not rows:
        raise ConvlogError("no resume attempts recorded yet: nothing to chart")
    series: dict[str, tuple[list[datetime], list[float]]] = {}
    for bucket, strategy, rate, _attempts in rows:
        xs, ys = series.setdefault(strategy, ([], []))
        xs.append(bucket)
        ys.append(100.0 * rate)
    fig, axes = plt.subplots(figsize=(9, 4.5), dpi=100)
    ax: Any = axes  # matplotlib's stubs take no datetimes, though it plots them
    assert isinstance(axes, Axes)
    markers = "osD^vP*X"
    try:
        for i, (strategy, (xs, ys)) in enumerate(sorted(series.items())):
            ax.plot(xs, ys, marker=markers[i % len(markers)], markersize=8 - i % 3,
                    label=strategy)
        buckets = sorted({r[0] for r in rows})
        step = (buckets[1] - buckets[0]) if len(buckets) > 1 else timedelta(hours=1)
        ax.set_xlim(buckets[0] - step / 2, buckets[-1] + step / 2)
        ax.set_title("Resume success rate per strategy")
        ax.set_ylabel("succeeded attempts (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize="small")
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d\n%H:%M"))  # type: ignore[no-untyped-call]
        fig.autofmt_xdate()
        fig.tight_layout()
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial.png")
        fig.savefig(partial, format="png")
        partial.replace(path)
    finally:
        plt.close(fig)
    return path
