"""A pool's items as a CSV download from its page (docs/domain.md, "Bring your own study"), for researchers and
admins: the same file as `export_pool`, streamed."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.views.decorators.http import require_safe

from accounts.roles import RESEARCHER, role_required
from annotation.access import pool_visible_or_404
from annotation.selectors.pool_items import pool_item_rows
from common.safe_csv import SafeWriter


class _Echo:
    """A file whose write hands the text back, so each CSV row is streamed as it is written."""

    def write(self, text: str) -> str:
        return text


@require_safe
@role_required(RESEARCHER)
def pool_items_download(request, name: str):
    pool = pool_visible_or_404(user=request.user, name=name)
    writer = SafeWriter(_Echo(), lineterminator="\n")  # type: ignore[arg-type]  # only write() is called
    response = StreamingHttpResponse(
        (writer.writerow(row) for row in pool_item_rows(pool=pool)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{pool.name}-items.csv"'
    return response
