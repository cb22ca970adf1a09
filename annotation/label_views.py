"""The pool page's label uploads (docs/domain.md, "Bring your own study"): people's labels and an external judge's,
checked and previewed before anything is written, then imported all or nothing. The page's script sends the same
form to the API (`POST /api/pools/{name}/imports/`) with upload progress; without a script the form posts here and
the page shows the preview, the outcome or every problem, each named by the uploaded file's own name and line."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.roles import RESEARCHER, role_required
from annotation.access import pool_visible_or_404
from annotation.forms import ImportGenerationsForm
from annotation.services.imports.catalog import LABELS, POOL_LABELS, import_formats, upload_of
from annotation.services.label_files import LabelImportError
from annotation.services.preview import UploadOptionsError
from annotation.views import _pool_detail_context


def _shown_options(post) -> dict:
    """What the form sent, to show it again: each label format's options as it reads them."""
    shown: dict = {}
    for entry in import_formats(section=POOL_LABELS):
        try:
            shown.update(entry.options_from(post))
        except UploadOptionsError:
            continue
    return shown


@require_http_methods(["GET", "HEAD", "POST"])  # GET: back to the pool page
@role_required(RESEARCHER)
def pool_label_import(request, name: str):
    pool = pool_visible_or_404(user=request.user, name=name)
    if request.method != "POST":
        return redirect("annotation:pool-detail", name=pool.name)
    kind = request.POST.get("kind", LABELS)
    files = request.FILES.getlist("files")
    result: dict = {"kind": kind, "options": _shown_options(request.POST)}
    formats = {entry.name: entry for entry in import_formats(section=POOL_LABELS)}
    entry = formats.get(kind)
    if entry is None:
        result["errors"] = [f"unknown kind {kind!r}: use {' or '.join(formats)}"]
    elif len(files) != 1:
        result["errors"] = ["choose one file"]
    else:
        try:
            options = entry.options_from(request.POST)
        except UploadOptionsError as exc:
            result["errors"] = [str(exc)]
        else:
            upload = upload_of(files[0])
            if request.POST.get("preview") == "true":
                result["preview"] = entry.preview(pool, [upload], options, kind)
                result["errors"] = result["preview"]["errors"]
            else:
                try:
                    outcome = entry.run(pool, [upload], options, kind, request.user)
                except LabelImportError as exc:
                    result["errors"] = exc.errors
                else:
                    messages.success(request, outcome.message)
                    return redirect(f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#labels")
    context = {**_pool_detail_context(pool, ImportGenerationsForm(), request.user), "label_upload": result}
    response = render(request, "annotation/pool_detail.html", context)
    response.status_code = 400 if result.get("errors") else 200
    return response
