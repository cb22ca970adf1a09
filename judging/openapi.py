"""The OpenAPI account of the judge API (judging/apis.py): the runs' lists and the label files are built by hand, so
each view declares its shapes here (`common.openapi.declared`), leaving the views' code alone. Imported by
judging/urls.py, so before any schema is built."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from common.openapi import FILE_FORMAT, FILE_RESPONSES, Detail, declared
from judging.apis import JobJudgeRunsApi, JudgeRunLabelsApi, PoolJudgeRunsApi, RunLabelsApi, RunSerializer

PoolJudgeRunsSchema = declared(
    PoolJudgeRunsApi, get=lambda view: {"responses": {200: RunSerializer(many=True), 404: Detail}}
)
JudgeRunLabelsSchema = declared(
    JudgeRunLabelsApi,
    get=lambda view: {
        "description": "One row per item: item, origin, label, confidence, prompt (the exact text scored), options "
        "(JSON: label -> option text) and score_<label> per option.",
        "parameters": [FILE_FORMAT],
        "responses": FILE_RESPONSES,
    },
)
JobJudgeRunsSchema = declared(
    JobJudgeRunsApi, get=lambda view: {"responses": {200: RunSerializer(many=True), 404: Detail}}
)
RunLabelsSchema = declared(
    RunLabelsApi,
    get=lambda view: {
        "description": "One row per judged generation (a pool run: per item): generation, model, dataset, setting, "
        "pronoun, context, sample_index, item (the study item showing it in `pool`, or in any pool, joined by ';'), "
        "label, confidence, prob_<label> (softmax share or vote share) and score_<label> per option.",
        "parameters": [FILE_FORMAT, OpenApiParameter("pool", str, description="fill `item` from this pool only")],
        "responses": FILE_RESPONSES,
    },
)
