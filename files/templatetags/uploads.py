"""The upload limit for the composer's script (static/js/files.js), which refuses a file over it
before sending a byte: `data-upload-max="{% upload_max %}" data-upload-too-large="{% upload_too_large %}"`."""

from __future__ import annotations

from django import template
from django.conf import settings

from files.errors import too_large

register = template.Library()


@register.simple_tag
def upload_max() -> int:
    """APTIX_UPLOAD_MAX_BYTES."""
    return int(settings.APTIX_UPLOAD_MAX_BYTES)


@register.simple_tag
def upload_too_large() -> str:
    """What the server says of a file over the limit (413), word for word."""
    return too_large(int(settings.APTIX_UPLOAD_MAX_BYTES)).message
