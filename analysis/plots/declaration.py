"""What a report figure is: one declaration with everything said about it in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Where the report page shows a figure: with the other figures, or in the judge's verdict section.
FIGURES_SECTION = "figures"
VERDICT_SECTION = "verdict"


@dataclass(frozen=True)
class FigureDeclaration:
    """One report figure.

    name: its name in URLs (`/reports/<pool>/plots/<name>.svg`) and exports.
    draw: draws it from the part of the report it reads (`inputs`), handed as a mapping that refuses any other key.
    table: the key of the report table it draws (analysis/report/tables/); the page shows it while that table has rows.
    also_reads: what else of the report it reads. Its drawing is kept under a digest of its inputs, so a new annotation
        redraws the figures of the human side, not the automatic ones.
    title, caption: its heading and caption on the page and in the exports.
    section: where the report page shows it (FIGURES_SECTION or VERDICT_SECTION).
    """

    name: str
    draw: Callable[..., Figure]
    table: str
    title: str
    caption: str
    also_reads: tuple[str, ...] = ()
    section: str = FIGURES_SECTION

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.table, *self.also_reads)
