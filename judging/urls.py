from django.urls import path

# judging.openapi: the schema of these views, registered when the URLs load (a schema is built from them), not at
# start-up, so that workers and commands do not import what the schema reads.
from judging import apis, openapi, views  # noqa: F401

app_name = "judging"

urlpatterns = [
    path("api/pools/<slug:name>/judges/", apis.PoolJudgeRunsApi.as_view(), name="api-pool-judges"),
    path("api/pools/<slug:name>/judges/<int:run>/labels/", apis.JudgeRunLabelsApi.as_view(), name="api-judge-labels"),
    path("api/generation-jobs/<int:job_id>/judges/", apis.JobJudgeRunsApi.as_view(), name="api-job-judges"),
    path("api/judge-runs/<int:run>/labels/", apis.RunLabelsApi.as_view(), name="api-run-labels"),
    path("generation/jobs/<int:job_id>/judge/", views.job_judge_page, name="job-judge"),
]
