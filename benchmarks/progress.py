"""The terminal side of a run: a rich progress bar and the tables as they are produced."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from benchmarks.tables import Table


class Reporter:
    """One progress bar per part, and rich tables; `quiet` sends everything to a buffer."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.console = Console(file=io.StringIO()) if quiet else Console()
        if not self.console.is_terminal:
            self.console.width = 160  # a log file: don't squeeze the tables to 80 columns
        self._progress: Progress | None = None
        self._task: Any = None

    def start(self, description: str, total: int) -> None:
        self.finish()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[step]}"),
            console=self.console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, step="")

    def step(self, label: str) -> None:
        """Name the measurement about to run."""
        if self._progress is not None:
            self._progress.update(self._task, step=label)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def table(self, table: Table) -> None:
        rich = RichTable(title=table.title, caption=table.note or None, title_justify="left")
        for i, column in enumerate(table.columns):
            rich.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
        for row in table.rows:
            rich.add_row(*row)
        if self._progress is not None:
            self._progress.console.print(rich)
        else:
            self.console.print(rich)

    def line(self, text: str) -> None:
        self.console.print(text)
