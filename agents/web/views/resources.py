"""A resource link of an MCP tool result (a `guide://…`, `file://…` URI) opened from its card: read
on the server that lists the URI (McpHost.read_resource; any other URI is refused), for the
session's owner only. Text comes back as plain text, an image as the image, anything else as a
download."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from tools.mcp import mcp_host

from .actions import signed_in_session


@require_GET
async def session_resource(request: HttpRequest, session_id: str) -> HttpResponse:
    session = await signed_in_session(request, session_id)
    if session is None:
        return HttpResponse(status=401)
    uri, host = request.GET.get("uri", ""), mcp_host()
    if not uri or host is None:
        raise Http404("No such resource.")
    result = await host.read_resource(uri, user_id=session.user_id)  # a per-user server: the owner's connection
    if not result.successful:
        return HttpResponse(result.error_message, status=404, content_type="text/plain; charset=utf-8")
    for attachment in getattr(result, "attachments", ()):
        if attachment.kind == "resource":  # text: as plain text below, whatever markup it is in
            continue
        response = HttpResponse(attachment.data, content_type=attachment.mime or "application/octet-stream")
        if attachment.kind != "image":
            response["Content-Disposition"] = f'attachment; filename="{attachment.name}"'
        return response
    return HttpResponse(result.content_for_model(), content_type="text/plain; charset=utf-8")
