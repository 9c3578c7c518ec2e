from django.urls import path

from apps.telemetry import views

app_name = "telemetry"
urlpatterns = [
    path("hosts/<int:pk>/charts/<slug:chart_id>/", views.chart, name="chart"),
    path("hosts/<int:pk>/now/", views.now, name="now"),
]
