from django.urls import path

from analysis import apis, views  # noqa: F401

urlpatterns = [
    path("reports/", views.report_index, name="report-index"),
    path("pair-reports/", views.pair_report_page, name="pair-report"),
    path("reports/<slug:pool>/", views.report_detail, name="report-detail"),
    path("reports/<slug:pool>/export/<str:fmt>/", views.report_export, name="report-export"),
    path("reports/<slug:pool>/study.zip", views.report_study_bundle, name="report-study-bundle"),
    path("reports/<slug:pool>/plots/<slug:name>.<str:fmt>", views.report_plot, name="report-plot"),
    path("reports/<slug:pool>/cells/", views.report_cells, name="report-cells"),
    path("reports/<slug:pool>/escalate/", views.report_escalate, name="report-escalate"),
    path("api/reports/<slug:pool>/", apis.ReportApi.as_view(), name="api-report"),
    path("judge-runs/<int:run>/card/", views.judge_card_page, name="judge-card"),
    path("judge-runs/<int:run>/card.<str:fmt>", views.judge_card_export, name="judge-card-export"),
    path("pools/<slug:name>/quality/", views.pool_quality, name="pool-quality"),
    path("api/pools/<slug:name>/quality/", apis.PoolQualityApi.as_view(), name="api-pool-quality"),
]
