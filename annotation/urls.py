from django.urls import path

from annotation import apis, export_apis, item_views, label_views, pool_apis, study_views, views  # noqa: F401

app_name = "annotation"

urlpatterns = [
    # The annotator API first: it is the site's busiest route (see config/urls.py).
    path("api/annotate/next/", apis.AnnotateNextApi.as_view(), name="api-next"),
    path("api/annotate/items/<str:public_id>/", apis.AnnotateItemApi.as_view(), name="api-item"),
    path("api/annotations/", apis.AnnotationSubmitApi.as_view(), name="api-annotations"),
    path("annotate/", views.annotate, name="annotate"),
    path("annotate/<slug:pool>/", views.annotate_pool, name="annotate-pool"),
    path("pools/", views.pool_list, name="pool-list"),
    path("pools/new/", views.pool_sample_page, name="pool-sample"),
    path("pools/new/files/", views.pool_files_page, name="pool-files"),
    path("pools/<slug:name>/", views.pool_detail, name="pool-detail"),
    path("pools/<slug:name>/assign/", views.pool_assign_page, name="pool-assign"),
    path("pools/<slug:name>/adjudicate/", views.pool_adjudicate, name="pool-adjudicate"),
    path("pools/<slug:name>/import/", views.pool_import, name="pool-import"),
    path("pools/<slug:name>/imports/<int:job_id>/cancel/", views.pool_import_cancel, name="pool-import-cancel"),
    path("pools/<slug:name>/labels/", label_views.pool_label_import, name="pool-label-import"),
    path("pools/<slug:name>/guidelines/", views.pool_guidelines, name="pool-guidelines"),
    path("pools/<slug:name>/items.csv", item_views.pool_items_download, name="pool-items"),
    path("pools/<slug:name>/qualification/", views.pool_qualification, name="pool-qualification"),
    # A pool's study on a crowd platform (annotation/study_views.py): the link participants follow, their finish page.
    path("pools/<slug:name>/recruit/", study_views.pool_recruit, name="pool-recruit"),
    path("pools/<slug:name>/participants.csv", study_views.pool_participants, name="pool-participants"),
    path("study/finish/", study_views.study_finish, name="study-finish"),
    path("study/<str:token>/", study_views.study_join, name="study-join"),
    path(
        "api/pools/<slug:name>/annotations/",
        export_apis.PoolAnnotationsExportApi.as_view(),
        name="api-pool-annotations",
    ),
    # Pools, imports and assignments (annotation/pool_apis.py): the same services and roles as the pages.
    path("api/pools/", pool_apis.PoolListCreateApi.as_view(), name="api-pool-list"),
    path("api/pools/<slug:name>/", pool_apis.PoolDetailApi.as_view(), name="api-pool-detail"),
    path("api/pools/<slug:name>/imports/", pool_apis.PoolImportListCreateApi.as_view(), name="api-import-list"),
    path(
        "api/pools/<slug:name>/imports/<int:job_id>/",
        pool_apis.PoolImportDetailApi.as_view(),
        name="api-import-detail",
    ),
    path("api/pools/<slug:name>/assignments/", pool_apis.PoolAssignApi.as_view(), name="api-pool-assign"),
]
