"""Page numbers as the schema types them.

DRF reads `?page=` (empty) as page 1; the schema says `page` is an integer, so
an empty value is refused like `?page=abc`, with a 404 "Invalid page".
"""

from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw.strip() == "":
            raise NotFound("Invalid page: give a page number, or leave ?page= out.")
        return super().get_page_number(request, paginator)
