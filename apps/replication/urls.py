from django.urls import path, re_path

from apps.replication import views

app_name = "replication"
urlpatterns = [
    path("", views.link_list, name="links"),
    path("new/", views.link_new, name="new"),
    path("<int:pk>/", views.link_detail, name="link"),
    path("<int:pk>/run/", views.run, name="run"),
    path("<int:pk>/delete/", views.delete, name="delete"),
    re_path(r"^(?P<pk>[0-9]{1,18})/(?P<action>pause|resume|opt-in|opt-out)/\Z", views.toggle,
            name="toggle"),
]
