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
from annotation.label_imports import JUDGE_LABELS, LABELS, label_import_kind
from annotation.services.label_files import LabelImportError, Upload
from annotation.views import _pool_detail_context

KINDS = {LABELS: "people's labels", JUDGE_LABELS: "an external judge's labels"}


def _options(post) -> dict:
    return {
        "wide": post.get("wide") == "true",
        "replace": post.get("replace") == "true",
        "judge": post.get("judge", "").strip(),
        "model_id": post.get("model_id", "").strip(),
        "description": post.get("description", "").strip(),
        "prompt": post.get("prompt", ""),
    }


@require_http_methods(["GET", "HEAD", "POST"])  # GET: back to the pool page
@role_required(RESEARCHER)
def pool_label_import(request, name: str):
    pool = pool_visible_or_404(user=request.user, name=name)
    if request.method != "POST":
        return redirect("annotation:pool-detail", name=pool.name)
    kind = request.POST.get("kind", LABELS)
    files = request.FILES.getlist("files")
    options = _options(request.POST)
    result: dict = {"kind": kind, "options": options}
    if kind not in KINDS:
        result["errors"] = [f"unknown kind {kind!r}: use {' or '.join(KINDS)}"]
    elif len(files) != 1:
        result["errors"] = ["choose one file"]
    else:
        upload = Upload(str(files[0].name or "upload.csv").replace("\x00", ""), files[0].read())
        handler = label_import_kind(kind)
        if request.POST.get("preview") == "true":
            result["preview"] = handler.preview(pool=pool, upload=upload, options=options)
            result["errors"] = result["preview"]["errors"]
        else:
            try:
                summary = handler.run(pool=pool, upload=upload, options=options, user=request.user)
            except LabelImportError as exc:
                result["errors"] = exc.errors
            else:
                messages.success(request, _outcome(kind, summary))
                return redirect(f"{reverse('annotation:pool-detail', kwargs={'name': pool.name})}#labels")
    context = {**_pool_detail_context(pool, ImportGenerationsForm(), request.user), "label_upload": result}
    response = render(request, "annotation/pool_detail.html", context)
    response.status_code = 400 if result.get("errors") else 200
    return response


def _outcome(kind: str, summary: dict) -> str:
    if kind == JUDGE_LABELS:
        return (
            f"{summary['file']}: judge run {summary['run']} of {summary['judge']} v{summary['version']}, "
            f"{summary['labels']} labels imported."
        )
    return (
        f"{summary['file']}: {summary['rows']} labels by {summary['annotators']} annotators: {summary['new']} new, "
        f"{summary['replaced']} replaced, {summary['completed']} completed, {summary['unchanged']} already there."
    )
