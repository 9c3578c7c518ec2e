from django.urls import path

from apps.ops import views

app_name = "ops"
urlpatterns = [
    path("", views.operation_list, name="list"),
    path("<int:pk>/", views.operation_detail, name="operation"),
    path("<int:pk>/cancel/", views.operation_cancel, name="cancel"),
]
