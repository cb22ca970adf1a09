"""The renderers of the APIs' file exports (DRF). Every CSV an endpoint answers goes through `common.safe_csv`:

- rows (a list of mappings) are written with a header, the keys in the order they first appear, each cell made safe
  for spreadsheets (`safe_cell`);
- bytes or text a service already wrote through `common.safe_csv` (a report's tables, a pool's export) pass as
  they are;
- anything else, which is an error's data (`{"detail": ...}`, field errors), is written as JSON, as every other
  endpoint's errors are.

`JsonLinesRenderer` only lets `?format=jsonl` pass DRF's content negotiation: the view writes the lines itself.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping

from rest_framework.renderers import BaseRenderer

from common.safe_csv import SafeDictWriter

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}


def _is_rows(data) -> bool:
    return isinstance(data, list | tuple) and all(isinstance(row, Mapping) for row in data)


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, bytes | str):
            return data
        if data is not None and _is_rows(data):
            header = list(dict.fromkeys(key for row in data for key in row))
            buffer = io.StringIO(newline="")
            writer = SafeDictWriter(buffer, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            writer.writerows(data)
            return buffer.getvalue().encode(self.charset)
        return json.dumps(data).encode(self.charset)


class _PassThrough(BaseRenderer):
    """Lets `?format=` pass DRF's content negotiation; the view returns the bytes itself."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes | str) else str(data or "")


class JsonLinesRenderer(_PassThrough):
    media_type = "application/jsonl"
    format = "jsonl"
