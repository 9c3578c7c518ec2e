"""The product's URLs plus one view that fails, to see the 500 page as a user would."""

from django.urls import path

from pozol.urls import handler400, handler403, handler404, handler500, urlpatterns


def fails(request):
    raise RuntimeError("a bug")


urlpatterns = [path("fails/", fails), *urlpatterns]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
