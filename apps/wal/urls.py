from django.urls import path

from apps.wal import views

app_name = "wal"
urlpatterns = [
    path("clusters/<int:cluster_pk>/enable/", views.enable, name="enable"),
    path("<int:pk>/disable/", views.disable, name="disable"),
    path("<int:pk>/refresh-command/", views.refresh_command, name="refresh_command"),
]
