from django.urls import path

from apps.tenants import views

app_name = "tenants"
urlpatterns = [
    path("tenants/", views.tenant_list, name="list"),
    path("tenants/<int:pk>/", views.tenant_detail, name="detail"),
    path("tenants/<int:pk>/delete/", views.tenant_delete, name="delete"),
    path("tenants/<int:pk>/quotas/", views.tenant_quotas, name="quotas"),
    path("tenants/<int:pk>/clusters/", views.cluster_assign, name="assign"),
    path("tenants/clusters/<int:pk>/delete/", views.cluster_unassign, name="unassign"),
    path("tenants/members/<int:pk>/role/", views.member_role, name="role"),
    path("tenants/members/<int:pk>/delete/", views.member_remove, name="remove"),
    path("account/", views.mine, name="mine"),
]
