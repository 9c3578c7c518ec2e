from django.urls import path

from apps.alerts import views

app_name = "alerts"
urlpatterns = [
    path("", views.alert_list, name="list"),
    path("<int:pk>/", views.alert_detail, name="alert"),
    path("<int:pk>/acknowledge/", views.acknowledge, name="acknowledge"),
    path("<int:pk>/silence/", views.silence, name="silence"),
    path("silences/<int:pk>/end/", views.end_silence, name="end_silence"),
    path("rules/", views.rule_list, name="rules"),
    path("rules/<slug:kind>/", views.rule_edit, name="rule"),
    path("channels/", views.channel_list, name="channels"),
    path("channels/<int:pk>/", views.channel_edit, name="channel"),
    path("channels/<int:pk>/test/", views.channel_test, name="channel_test"),
    path("channels/<int:pk>/delete/", views.channel_delete, name="channel_delete"),
    path("deliveries/", views.delivery_list, name="deliveries"),
    path("scrubs/", views.scrub_list, name="scrubs"),
    path("scrubs/<int:pk>/run/", views.scrub_run, name="scrub_run"),
    path("scrubs/<int:pk>/delete/", views.scrub_delete, name="scrub_delete"),
]
