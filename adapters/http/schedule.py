"""`convlog serve`'s retention schedule: the policy carried out at start and every
`--retention-interval` seconds (default 3600) of the log's clock, in a worker thread
(an erasure rewrites and vacuums: never on the event loop). A failed run is
reported on stderr and tried again at the next interval; the server keeps serving.
"""

from __future__ import annotations

import sys

import anyio

from convlog.services.retention import Schedule


async def run_schedule(schedule: Schedule, stopping: anyio.Event, poll: float) -> None:
    """Until `stopping`: every `poll` seconds, run the policy if it is due."""
    while not stopping.is_set():
        if schedule.due():
            try:
                done = await anyio.to_thread.run_sync(schedule.tick)
            except Exception as exc:
                print(f"convlog serve: the retention run failed: {type(exc).__name__}: "
                      f"{exc}", file=sys.stderr, flush=True)
            else:
                if done is not None and done.actions:
                    print(f"convlog serve: retention archived {done.archived}, erased "
                          f"{done.erased} conversation(s)", file=sys.stderr, flush=True)
        with anyio.move_on_after(poll):
            await stopping.wait()
