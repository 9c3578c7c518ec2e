from django.urls import path

from apps.clones import views

app_name = "clones"
urlpatterns = [
    path("hosts/<int:host_pk>/new/", views.new, name="new"),
    path("hosts/<int:host_pk>/on-target/", views.on_target, name="on_target"),
    path("hosts/<int:host_pk>/settings/", views.host_settings, name="settings"),
    path("", views.mine, name="mine"),
    path("clusters/<int:pk>/", views.cluster, name="cluster"),
    path("<int:pk>/", views.clone, name="clone"),
    path("<int:pk>/password/", views.password, name="password"),
    path("<int:pk>/reset/", views.reset, name="reset"),
    path("<int:pk>/destroy/", views.destroy, name="destroy"),
]
