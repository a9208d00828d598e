"""What the demo shows while it runs: rich's live view on a terminal, plain lines otherwise (CI, pipes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TextIO

ASSET_COLUMNS = ("asset", "snapshot", "quality")
RULE_COLUMNS = ("rule", "status", "why")
TRIGGER_COLUMNS = ("rule", "trigger key", "status", "pinned inputs")


@dataclass
class Board:
    """One look at the stack: assets, rules, triggers (what the live table shows)."""

    assets: list[tuple[str, ...]] = field(default_factory=list)  # name, snapshot, quality
    rules: list[tuple[str, ...]] = field(default_factory=list)  # rule, status, why
    triggers: list[tuple[str, ...]] = field(default_factory=list)  # rule, key, status, pins

    def sections(self) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
        return [
            ("assets", ASSET_COLUMNS, self.assets),
            ("rules", RULE_COLUMNS, self.rules),
            ("triggers", TRIGGER_COLUMNS, self.triggers),
        ]


class PlainView:
    """Prints steps and lines, and the board once at the end."""

    def __init__(self, steps: int) -> None:
        self.steps, self.done = steps, 0
        self.board = Board()

    def __enter__(self) -> PlainView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.final()

    def step(self, title: str) -> None:
        self.done += 1
        print(f"\n[{self.done}/{self.steps}] {title}", flush=True)

    def say(self, line: str) -> None:
        print(line, flush=True)

    def show(self, board: Board) -> None:
        self.board = board

    def final(self) -> None:
        for title, columns, rows in self.board.sections():
            widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
            print(f"\n{title}:")
            for row in [columns, *rows]:
                print("   " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


class LiveView(PlainView):
    """rich: a progress bar and a table of assets, rules and triggers, refreshed while the story runs."""

    def __init__(self, steps: int, out: TextIO) -> None:
        super().__init__(steps)
        from rich.console import Console
        from rich.live import Live
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(file=out)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
        )  # fmt: skip
        self.task = self.progress.add_task("starting", total=steps)
        # Other threads' output must not tear the view: it does not take over stdout (see demo.quiet).
        self.live = Live(
            self._render(),
            console=self.console,
            refresh_per_second=4,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.update(self.task, completed=self.done)
        self.live.__exit__(None, None, None)
        self.console.print(self._tables())

    def step(self, title: str) -> None:
        self.done += 1
        self.progress.update(self.task, completed=self.done - 1, description=title)
        self.console.print(f"\n[bold cyan][{self.done}/{self.steps}][/] [bold]{title}[/]")
        self.live.update(self._render())

    def say(self, line: str) -> None:
        styled = line.replace("  ok  ", "  [green]ok  [/]", 1).replace("  FAIL", "  [bold red]FAIL[/]", 1)
        self.console.print(styled, highlight=False)

    def show(self, board: Board) -> None:
        self.board = board
        self.live.update(self._render())

    def _tables(self) -> Any:
        from rich.console import Group
        from rich.table import Table

        tables = []
        for title, columns, rows in self.board.sections():
            table = Table(title=title, expand=True, title_justify="left")
            for column in columns:
                table.add_column(column, no_wrap=column != "why", overflow="ellipsis")
            for row in rows:
                table.add_row(*row)
            tables.append(table)
        return Group(*tables)

    def _render(self) -> Any:
        from rich.console import Group

        return Group(self.progress, self._tables())


def make_view(steps: int, out: TextIO) -> PlainView:
    """The live view on a terminal, plain prints when stdout is not one."""
    if out.isatty():
        try:
            return LiveView(steps, out)
        except ImportError:  # rich is a dev dependency
            pass
    return PlainView(steps)
