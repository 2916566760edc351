"""Error pages rendered where the request's database connection already is, and giving back any other.

Under ASGI, Django turns an exception into its response on a throwaway thread of the loop's default
executor (`sync_to_async(response_for_exception, thread_sensitive=False)` in
django/core/handlers/exception.py), not on the request's thread, and no request_finished ever closes
what that thread opens. Our 404 and 403 pages query (the context processors: the signed-in user, the
inbox bell): each such thread kept a pooled connection checked out for good, so a few 404s took most
of a process's APTIX_DB_POOL_MAX; and each error took a second connection while the request's thread
held its first, so a burst of them could wait on each other until the pool's timeout.

- `ClientErrorsOnTheRequestThread` (middleware): a view's 4xx exception (a 404, a 403, a bad request)
  becomes its page in `process_exception`, which Django runs on the request's own thread.
- The handlers (aptix/urls.py `handler4xx/500`): Django's own pages; rendered anywhere else (an
  exception raised by a middleware, a 500), they close the connections they opened on that thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.core.handlers.exception import response_for_exception
from django.db import connections
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.deprecation import MiddlewareMixin
from django.views import defaults

CLIENT_ERRORS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation, MultiPartParserError)
ON_THE_REQUEST_THREAD = "_aptix_error_page_on_the_request_thread"


class ClientErrorsOnTheRequestThread(MiddlewareMixin):
    """A view's 4xx exception rendered as Django would, but on the request's thread (see the module).
    Other exceptions (a 500, with got_request_exception and the traceback) stay Django's."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, CLIENT_ERRORS):
            return None
        setattr(request, ON_THE_REQUEST_THREAD, True)
        # Raised again so that the debug pages Django renders for some of them find it in sys.exc_info()
        try:
            raise exception
        except CLIENT_ERRORS as exc:
            return response_for_exception(request, exc)


def _giving_connections_back(page: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @functools.wraps(page)
    def handler(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return page(request, *args, **kwargs)
        finally:
            if not getattr(request, ON_THE_REQUEST_THREAD, False):
                for conn in connections.all(initialized_only=True):
                    if not conn.in_atomic_block:  # a test's transaction, on the request's thread
                        conn.close()

    return handler


bad_request = _giving_connections_back(defaults.bad_request)
permission_denied = _giving_connections_back(defaults.permission_denied)
page_not_found = _giving_connections_back(defaults.page_not_found)
server_error = _giving_connections_back(defaults.server_error)
