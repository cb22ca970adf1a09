"""`export_instances`: one CSV row per instance in dataset order, streamed (a distractor set has 5.6 M rows), in the
columns of the dataset's kind (its spec's `export_columns` and `export_rows`). The file appears complete or not at
all."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from common.safe_csv import SafeDictWriter
from generation.datasets.registry import dataset_kind
from generation.models import Dataset
from generation.selectors import dataset_codebook


def instances_export(*, dataset: Dataset, path: Path) -> int:
    spec = dataset_kind(dataset.kind)
    codebook = dataset_codebook(dataset=dataset) if spec.codebook is None and not spec.pairs else None
    return _rows_export(path, spec.export_columns, spec.export_rows(dataset, codebook))


def _rows_export(path: Path, columns: tuple[str, ...], rows: Iterable[dict]) -> int:
    """Write rows to a CSV that appears complete or not at all."""
    partial = path.with_name(path.name + ".part")
    written = 0
    with partial.open("w", newline="", encoding="utf-8") as handle:
        writer = SafeDictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            written += 1
    partial.replace(path)
    return written
