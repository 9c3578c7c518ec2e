from django.urls import path, re_path

from apps.snapshots import views

app_name = "snapshots"
urlpatterns = [
    path("hosts/<int:host_pk>/take/", views.take, name="take"),
    re_path(r"^(?P<pk>[0-9]{1,18})/(?P<action>hold|release|destroy)/\Z", views.act, name="act"),
]
