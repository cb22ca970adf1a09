from django.urls import path

from generation import apis, views  # noqa: F401

urlpatterns = [
    path("generation/jobs/", views.job_list_page, name="generation-jobs"),
    path("generation/datasets/", views.dataset_list_page, name="generation-datasets"),
    path(
        "generation/datasets/imports/<int:job_id>/cancel/",
        views.dataset_import_cancel_page,
        name="generation-dataset-import-cancel",
    ),
    path("generation/jobs/new/", views.job_new_page, name="generation-job-new"),
    path("generation/jobs/<int:job_id>/", views.job_results_page, name="generation-job-results"),
    path("generation/jobs/<int:job_id>/cancel/", views.job_cancel_page, name="generation-job-cancel"),
    path("generation/jobs/<int:job_id>/resume/", views.job_resume_page, name="generation-job-resume"),
    path("generation/jobs/<int:job_id>/export.csv", views.job_export_page, name="generation-job-export"),
    path("api/generation-jobs/", apis.JobListCreateApi.as_view(), name="api-generation-jobs"),
    path("api/generation-jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="api-generation-job"),
    path("api/generation-jobs/<int:job_id>/cancel/", apis.JobCancelApi.as_view(), name="api-generation-job-cancel"),
    path("api/generation-jobs/<int:job_id>/resume/", apis.JobResumeApi.as_view(), name="api-generation-job-resume"),
    path("api/models/", apis.ModelListCreateApi.as_view(), name="api-models"),
]
