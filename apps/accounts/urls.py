from django.urls import path

from apps.accounts import views

app_name = "accounts"
urlpatterns = [
    path("account/tokens/", views.token_list, name="tokens"),
    path("account/tokens/<int:pk>/revoke/", views.token_revoke, name="revoke"),
]
