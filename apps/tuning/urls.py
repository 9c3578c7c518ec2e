from django.urls import path

from apps.tuning import views

app_name = "tuning"
urlpatterns = [
    path("profiles/", views.profiles, name="profiles"),
    path("profiles/new/", views.profile_edit, name="profile_new"),
    path("profiles/<int:pk>/", views.profile_detail, name="profile"),
    path("profiles/<int:pk>/edit/", views.profile_edit, name="profile_edit"),
    path("profiles/<int:pk>/copy/", views.profile_copy, name="profile_copy"),
    path("profiles/<int:pk>/delete/", views.profile_delete, name="profile_delete"),
    path("hosts/<int:host_pk>/assign/", views.assign, name="assign"),
    path("hosts/<int:host_pk>/unassign/", views.unassign, name="unassign"),
    path("hosts/<int:host_pk>/plan/", views.make_plan, name="make_plan"),
    path("plans/<int:pk>/", views.plan_detail, name="plan"),
    path("plans/<int:pk>/apply/", views.plan_apply, name="plan_apply"),
    path("plans/<int:pk>/rollback/", views.plan_rollback, name="plan_rollback"),
]
