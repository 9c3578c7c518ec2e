from django.urls import path

from apps.benchmarks import views

app_name = "benchmarks"
urlpatterns = [
    path("", views.benchmark_list, name="list"),
    path("<int:pk>/", views.benchmark_detail, name="benchmark"),
    path("<int:pk>/compare/", views.compare, name="compare"),
    path("hosts/<int:host_pk>/run/", views.run, name="run"),
    path("validations/<int:pk>/", views.validation_detail, name="validation"),
    path("validations/<int:pk>/run-again/", views.run_again, name="run_again"),
]
