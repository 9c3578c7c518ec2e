from django.urls import path

from apps.clones import views

app_name = "clones"
urlpatterns = [
    path("hosts/<int:host_pk>/new/", views.new, name="new"),
    path("hosts/<int:host_pk>/settings/", views.host_settings, name="settings"),
    path("<int:pk>/destroy/", views.destroy, name="destroy"),
]
