"""Page numbers as the schema types them, and cursors for the long lists automation reads.

DRF reads `?page=` (empty) as page 1; the schema says `page` is an integer, so
an empty value is refused like `?page=abc`, with a 404 "Invalid page".

`CursorOrPages` (the operations, clones, snapshots and events lists) keeps
`?page=` working for existing clients and adds `?cursor=`: an empty cursor asks
for the first page, and each answer's `next` carries the cursor of the page
after it. Cursor pages are ordered by id, newest first (a view whose ids are not
sequential names another `cursor_ordering`), and each page starts
after the last id of the previous one, so a row inserted meanwhile (a newer
id) never shifts what follows: a walk neither repeats nor skips a row that
existed when it began. Page numbers are offsets, which a concurrent insert does
shift; their order is made total (id breaks ties) so a page is at least stable
while nothing changes. A cursor that is not one PoZoL made is a 404 "Invalid
cursor", like a page that does not exist.
"""

from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, PageNumberPagination

TIE_BREAKS = {"id", "-id", "pk", "-pk"}


class Pagination(PageNumberPagination):
    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw.strip() == "":
            raise NotFound("Invalid page: give a page number, or leave ?page= out.")
        return super().get_page_number(request, paginator)


class _Cursor(CursorPagination):
    ordering = "-id"
    page_size_query_param = None


class CursorOrPages(Pagination):
    """`?cursor=` (empty for the first page) or `?page=`, one or the other."""

    cursor_query_param = "cursor"

    def paginate_queryset(self, queryset, request, view=None):
        self._cursor = None
        if self.cursor_query_param in request.query_params:
            if self.page_query_param in request.query_params:
                raise NotFound("Give ?cursor= or ?page=, not both.")
            self._cursor = _Cursor()
            self._cursor.page_size = self.page_size
            self._cursor.ordering = getattr(view, "cursor_ordering", _Cursor.ordering)
            return self._cursor.paginate_queryset(queryset, request, view)
        ordering = list(queryset.query.order_by or queryset.model._meta.ordering)
        if not TIE_BREAKS & set(ordering):
            queryset = queryset.order_by(*ordering, "-id")
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data):
        if self._cursor is not None:
            return self._cursor.get_paginated_response(data)
        return super().get_paginated_response(data)

    def get_paginated_response_schema(self, schema):
        paged = super().get_paginated_response_schema(schema)
        paged["required"] = ["results"]  # no count in cursor mode
        paged["properties"]["count"]["description"] = "page-number mode only"
        return paged

    def get_schema_operation_parameters(self, view):
        return [*super().get_schema_operation_parameters(view), {
            "name": self.cursor_query_param, "required": False, "in": "query",
            "description": "Cursor pagination, newest first: empty for the first page, "
                           "then the cursor in `next`. Not with `page`.",
            "schema": {"type": "string"}}]
