"""The sweep's progress bar on stderr, drawn by rich (a maintained library; it replaced sweep.py's
hand-drawn `[#####.....] 12/24` line): the bar, the count, the rate and the time left. Refreshed
only when a row is decided (no refresh thread: the sweep forks its workers)."""
from __future__ import annotations

_STATE: dict = {}


def show(done: int, total: int) -> None:
    """Draw the bar at `done` of `total`, starting it at the first call."""
    p = _STATE.get("progress")
    if p is None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        p = Progress(TextColumn("deciding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                     console=Console(stderr=True), auto_refresh=False, transient=False)
        p.start()
        _STATE["progress"], _STATE["task"] = p, p.add_task("sweep", total=total)
    p.update(_STATE["task"], completed=done)
    p.refresh()


def finish() -> None:
    """Leave the bar as it last stood (a sweep done or interrupted) and end its line."""
    p = _STATE.pop("progress", None)
    _STATE.pop("task", None)
    if p is not None:
        p.stop()
