from django.urls import path, re_path

from apps.snapshots import policy_views, views

app_name = "snapshots"
urlpatterns = [
    path("hosts/<int:host_pk>/take/", views.take, name="take"),
    re_path(r"^(?P<pk>[0-9]{1,18})/(?P<action>hold|release|destroy)/\Z", views.act, name="act"),
    path("policies/", policy_views.policy_list, name="policies"),
    path("policies/new/", policy_views.policy_edit, name="policy_new"),
    path("policies/<int:pk>/", policy_views.policy_edit, name="policy"),
    path("policies/<int:pk>/preview/", policy_views.policy_preview, name="policy_preview"),
    path("policies/<int:pk>/assign/", policy_views.assign, name="policy_assign"),
    path("policies/assignments/<int:pk>/delete/", policy_views.unassign,
         name="policy_unassign"),
]
