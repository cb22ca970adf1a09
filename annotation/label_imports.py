"""The label files a pool takes from the page and the API (docs/domain.md, "Bring your own study"): people's labels
(`labels`, here) and an external judge's (`judge_labels`, registered by judging at start-up: annotation never
imports judging). Each kind previews a file (its first rows and what the import would do, or every problem, nothing
written) and imports it (all or nothing). Options arrive as the request gave them: `wide`, `replace` (labels);
`judge`, `model_id`, `description`, `prompt` (judge labels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from annotation.models import Pool
from annotation.services.label_files import LabelImportError, Upload
from annotation.services.label_import import labels_import, labels_preview

LABELS = "labels"
JUDGE_LABELS = "judge_labels"


class LabelImportKind(Protocol):
    def preview(self, *, pool: Pool, upload: Upload, options: dict[str, Any]) -> dict:
        """{"ok", "errors", "rows", and the counts the import would give}; writes nothing."""
        ...

    def run(self, *, pool: Pool, upload: Upload, options: dict[str, Any], user) -> dict:
        """The import's summary; raises LabelImportError (nothing written)."""
        ...


@dataclass(frozen=True)
class PeoplesLabels:
    def preview(self, *, pool: Pool, upload: Upload, options: dict[str, Any]) -> dict:
        return labels_preview(
            source=upload, pool=pool, wide=bool(options.get("wide")), replace=bool(options.get("replace"))
        )

    def run(self, *, pool: Pool, upload: Upload, options: dict[str, Any], user) -> dict:
        plan = labels_import(
            source=upload, pool_name=pool.name, wide=bool(options.get("wide")),
            replace=bool(options.get("replace")), created_by=user,
        )  # fmt: skip
        return plan.summary()


_kinds: dict[str, LabelImportKind] = {LABELS: PeoplesLabels()}


def label_import_kind_register(name: str, kind: LabelImportKind) -> None:
    _kinds[name] = kind


def label_import_kind(name: str) -> LabelImportKind:
    """The kind's handler; KeyError for an unknown one."""
    return _kinds[name]


__all__ = ["JUDGE_LABELS", "LABELS", "LabelImportError", "label_import_kind", "label_import_kind_register"]
