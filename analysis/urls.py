from django.urls import path

from analysis import apis, views

urlpatterns = [
    path("reports/", views.report_index, name="report-index"),
    path("reports/<slug:pool>/", views.report_detail, name="report-detail"),
    path("reports/<slug:pool>/export/<str:fmt>/", views.report_export, name="report-export"),
    path("reports/<slug:pool>/plots/<slug:name>.<str:fmt>", views.report_plot, name="report-plot"),
    path("api/reports/<slug:pool>/", apis.ReportApi.as_view(), name="api-report"),
]
