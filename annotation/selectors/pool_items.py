"""A pool's items as a file (docs/domain.md, "Bring your own study"): one row per item, with its cell, its texts,
the heuristic's verdict and its kind, for researchers and admins (`export_pool`, the pool page's download).

The columns are declarations: each names the item field it reads, how its cell is written, and whether a pool's
file has it at all, so a column that only some pools carry (an active draw's inclusion probability, say) is one more
declaration in `ITEM_COLUMNS`. Its first columns are those the free-text generations import reads, so the file
imports again as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from annotation.models import Pool, PoolItem
from common.safe_csv import SafeWriter

READ_CHUNK = 2000


def _verdict(value: bool | None) -> str | int:
    """The heuristic as 1 (correct), 0 (misgendering) or empty (no verdict: no pronoun stated)."""
    return "" if value is None else int(value)


def _as_is(value: Any) -> Any:
    return "" if value is None else value


def _every_pool(pool: Pool) -> bool:
    return True


@dataclass(frozen=True)
class ItemColumn:
    name: str
    field: str  # the PoolItem value read (a field, or a lookup such as "generation__instance__template__source_id")
    cell: Callable[[Any], Any] = _as_is
    shown: Callable[[Pool], bool] = _every_pool


def _active_pool(pool: Pool) -> bool:
    """An active draw (docs/domain.md, "Spending people's labels where they count"): its items carry pi."""
    return pool.active_run_id is not None


def _pair_pool(pool: Pool) -> bool:
    """A stereotype pair pool (docs/domain.md, 'Stereotype pair benchmarks'): its items name their pair."""
    return pool.items.filter(pair__isnull=False).exists()


def _item_id(row: dict) -> str:
    return row["external_id"] or row["public_id"]


ITEM_COLUMNS: list[ItemColumn] = [
    ItemColumn("item", "external_id"),  # the file's own id; Concord's opaque one where the item came from elsewhere
    ItemColumn("model", "model_name"),
    ItemColumn("dataset", "dataset"),
    ItemColumn("setting", "setting"),
    ItemColumn("pronoun", "pronoun"),
    ItemColumn("sample", "sample_index"),
    ItemColumn("context", "context"),
    ItemColumn("generation", "continuation"),
    ItemColumn("heuristic", "heuristic_correct", cell=_verdict),
    ItemColumn("kind", "kind"),
    ItemColumn("inclusion_probability", "inclusion_probability", shown=_active_pool),
    ItemColumn("pair", "pair__source_id", shown=_pair_pool),  # the benchmark's own id (`dataset` names it)
]


def pool_item_columns(*, pool: Pool) -> list[ItemColumn]:
    return [column for column in ITEM_COLUMNS if column.shown(pool)]


def pool_item_rows(*, pool: Pool) -> Iterator[list]:
    """The header, then one row per item in the pool's order (its items' ids), read in chunks."""
    columns = pool_item_columns(pool=pool)
    yield [column.name for column in columns]
    fields = sorted({column.field for column in columns} | {"public_id", "external_id"})
    items = PoolItem.objects.filter(pool=pool).order_by("pk").values(*fields)
    for row in items.iterator(chunk_size=READ_CHUNK):
        row["external_id"] = _item_id(row)
        yield [column.cell(row[column.field]) for column in columns]


def pool_items_write(*, pool: Pool, handle: IO[str]) -> int:
    """Write the pool's items as CSV (every cell safe for a spreadsheet); returns the number of items."""
    writer = SafeWriter(handle, lineterminator="\n")
    rows = pool_item_rows(pool=pool)
    writer.writerow(next(rows))  # the header
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count
