from django.urls import path

from apps.experiments import views

app_name = "experiments"
urlpatterns = [
    path("", views.experiment_list, name="list"),
    path("new/", views.create, name="create"),
    path("<int:pk>/", views.experiment_detail, name="experiment"),
    path("<int:pk>/cancel/", views.cancel, name="cancel"),
]
