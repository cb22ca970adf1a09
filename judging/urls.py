from django.urls import path

from judging import apis, views  # noqa: F401

app_name = "judging"

urlpatterns = [
    path("api/pools/<slug:name>/judges/", apis.PoolJudgeRunsApi.as_view(), name="api-pool-judges"),
    path("api/pools/<slug:name>/judges/<int:run>/labels/", apis.JudgeRunLabelsApi.as_view(), name="api-judge-labels"),
    path("api/generation-jobs/<int:job_id>/judges/", apis.JobJudgeRunsApi.as_view(), name="api-job-judges"),
    path("api/judge-runs/<int:run>/labels/", apis.RunLabelsApi.as_view(), name="api-run-labels"),
    path("generation/jobs/<int:job_id>/judge/", views.job_judge_page, name="job-judge"),
    path("pools/<slug:name>/panel/", views.pool_panel_page, name="pool-panel"),
]
