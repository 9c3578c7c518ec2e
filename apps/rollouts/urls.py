from django.urls import path

from apps.rollouts import views

app_name = "rollouts"
urlpatterns = [
    path("", views.rollout_list, name="list"),
    path("new/", views.create, name="create"),
    path("<int:pk>/", views.rollout_detail, name="rollout"),
    path("<int:pk>/pause/", views.pause, name="pause"),
    path("<int:pk>/resume/", views.resume, name="resume"),
]
