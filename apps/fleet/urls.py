from django.urls import path

from apps.fleet import views

app_name = "fleet"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("hosts/add/", views.add_host, name="add"),
    path("hosts/<int:pk>/", views.host_detail, name="host"),
    path("hosts/<int:pk>/discover/", views.discover, name="discover"),
    path("hosts/<int:pk>/confirm-host-key/", views.confirm_host_key, name="confirm_host_key"),
    path("hosts/<int:pk>/forget-host-key/", views.forget_host_key, name="forget_host_key"),
    path("hosts/<int:pk>/delete/", views.delete_host, name="delete"),
    path("hosts/<int:pk>/pools/<str:pool>/reserve/", views.pool_reserve, name="pool_reserve"),
    # After the actions above: any other segment names a section of the host page.
    path("hosts/<int:pk>/<slug:section>/", views.host_detail, name="host_section"),
]
