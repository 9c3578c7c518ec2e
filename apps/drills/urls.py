from django.urls import path

from apps.drills import views

app_name = "drills"
urlpatterns = [
    path("", views.fleet, name="list"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("hosts/<int:host_pk>/new/", views.new_schedule, name="new"),
    path("hosts/<int:host_pk>/reconcile/", views.reconcile, name="reconcile"),
    path("hosts/<int:host_pk>/recover-table/", views.recover_table, name="recover_table"),
    path("schedules/<int:pk>/run/", views.run_now, name="run_now"),
    path("schedules/<int:pk>/delete/", views.delete_schedule, name="delete"),
]
