"""Server-rendered pages. The annotation page carries no item data: its script loads items from the blinded API."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, role_required
from annotation import selectors
from annotation.forms import AdjudicationForm, AssignForm, PoolSampleForm
from annotation.models import Pool, PoolItem
from annotation.schema import LABEL_NAMES, TAGS
from annotation.services import AssignmentError, PoolSampleError, adjudication_save, assignments_create, pool_sample
from annotation.services.adjudication import AdjudicationError


@role_required(ANNOTATOR)
def annotate(request):
    labels = [(key, LABEL_NAMES[key]) for key in ("correct", "misgendering", "no_pronoun", "plural_they")]
    return render(
        request,
        "annotation/annotate.html",
        {"label_names": dict(labels), "tags": TAGS, "pool": request.GET.get("pool", "")},
    )


@role_required(RESEARCHER)
def pool_list(request):
    return render(request, "annotation/pool_list.html", {"pools": selectors.pool_summaries()})


@role_required(RESEARCHER)
def pool_detail(request, name: str):
    pool = get_object_or_404(Pool, name=name)
    annotators, cells = selectors.pool_progress(pool=pool)
    return render(
        request,
        "annotation/pool_detail.html",
        {"pool": pool, "annotators": annotators, "cells": cells, "items": pool.items.count()},
    )


@role_required(RESEARCHER)
def pool_adjudicate(request, name: str):
    pool = get_object_or_404(Pool, name=name)
    if request.method == "POST":
        form = AdjudicationForm(request.POST, labels=pool.labels)
        if form.is_valid():
            item = get_object_or_404(PoolItem, pool=pool, public_id=form.cleaned_data["item"])
            try:
                adjudication_save(
                    item=item,
                    label=form.cleaned_data["label"],
                    extraneous=form.cleaned_data["extraneous"],
                    notes=form.cleaned_data["notes"],
                    adjudicator=request.user,
                )
            except AdjudicationError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, "Adjudication saved.")
            return redirect(f"{request.path}#item-{item.public_id}")
        messages.error(request, f"Not saved: {form.errors.as_text()}")
    items = selectors.pool_disagreements(pool=pool)
    rows = []
    for item in items:
        verdict = getattr(item, "adjudication", None)
        initial = {"item": item.public_id}
        if verdict is not None:
            initial.update(
                label=verdict.label,
                extraneous={True: "yes", False: "no"}.get(verdict.extraneous, ""),
                notes=verdict.notes,
            )
        annotations = [
            (annotation, [item.continuation[span.start : span.end] for span in annotation.spans.all()])
            for annotation in item.annotations.all()
        ]
        rows.append((item, annotations, verdict, AdjudicationForm(initial=initial, labels=pool.labels)))
    return render(request, "annotation/adjudicate.html", {"pool": pool, "rows": rows, "label_names": LABEL_NAMES})


@role_required(ADMIN)
def pool_sample_page(request):
    form = PoolSampleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = pool_sample(
                name=data["name"],
                job_ids=data["jobs"],
                per_cell=data["per_cell"],
                seed=data["seed"],
                allow_short=data["allow_short"],
                created_by=request.user,
            )
        except PoolSampleError as exc:
            form.add_error(None, str(exc))
        else:
            for cell in result.short:
                messages.warning(request, f"Short cell: {cell}")
            messages.success(request, f"Pool {result.pool.name}: {result.items} items in {len(result.cells)} cells.")
            return redirect("annotation:pool-detail", name=result.pool.name)
    return render(request, "annotation/pool_sample.html", {"form": form})


@role_required(ADMIN)
def pool_assign_page(request, name: str):
    pool = get_object_or_404(Pool, name=name)
    form = AssignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = assignments_create(
                pool=pool, usernames=data["annotators"].split(","), overlap=data["overlap"], seed=data["seed"]
            )
        except AssignmentError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"{result.created} new assignments; {result.overlap_items} items have two annotators.",
            )
            return redirect("annotation:pool-detail", name=pool.name)
    return render(request, "annotation/pool_assign.html", {"pool": pool, "form": form})
