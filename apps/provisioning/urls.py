from django.urls import path

from apps.provisioning import views

app_name = "provisioning"
urlpatterns = [
    path("hosts/<int:host_pk>/new/", views.new, name="new"),
]
