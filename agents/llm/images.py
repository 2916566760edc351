"""Images of tool results for the model. A tool message may carry `images` (agents/run/tool_calls.py:
the stored pictures of an MCP result, by storage path); the key is ours and never goes out. A
vision model (the models configuration's `"vision": true`) gets them as `image_url` content parts
of a user message right after the tool messages of that step (and the images attached to a user's
message as parts of that message): Chat Completions accepts images in
user messages only, and every tool message must follow its assistant message. Any other model
reads only the tool message's text, which already names each image and where the user sees it."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

IMAGES_NOTE = "The images of the tool results above, in order ({names}):"
# Where a user message's text ends and the note on its attached files begins (agents/attachments.py
# writes it; the offline model reads the user's words before it).
FILES_NOTE = "\n\n[Attached files]\n"
RESOURCES_NOTE = "\n\n[Attached MCP resources]\n"  # ... and of its MCP resources, after the files'
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # what OpenAI accepts per image; a bigger one stays a placeholder


async def with_images(messages: list[dict], *, vision: bool, storage: Any = None) -> list[dict]:
    """The messages as the model server gets them (the same list when no message carries images)."""
    if not any("images" in message for message in messages):
        return messages
    if vision:
        return await asyncio.to_thread(_with_parts, messages, storage)
    return [_plain(message) for message in messages]


def _plain(message: dict) -> dict:
    return {key: value for key, value in message.items() if key != "images"} if "images" in message else message


def _with_parts(messages: list[dict], storage: Any) -> list[dict]:
    if storage is None:
        from django.core.files.storage import default_storage

        storage = default_storage
    sent: list[dict] = []
    pending: list[dict] = []
    for message in messages:
        if pending and message.get("role") != "tool":
            sent.append(_images_message(pending, storage))
            pending = []
        if message.get("role") == "user" and message.get("images"):  # a message's own attached images
            sent.append(_user_with_parts(message, storage))
            continue
        pending += message.get("images") or []
        sent.append(_plain(message))
    if pending:
        sent.append(_images_message(pending, storage))
    return [message for message in sent if message]


def _user_with_parts(message: dict, storage: Any) -> dict:
    """A user message with the images attached to it (the composer's, the API's `files`) as image parts
    after its text; an image gone from storage stays named in the text only."""
    parts = [
        {"type": "image_url", "image_url": {"url": url}} for i in message["images"] if (url := _data_url(i, storage))
    ]
    text = {"type": "text", "text": message.get("content") or ""}
    return {**_plain(message), "content": [text, *parts]} if parts else _plain(message)


def _images_message(images: list[dict], storage: Any) -> dict:
    parts: list[dict] = []
    names = []
    for number, image in enumerate(images, 1):
        url = _data_url(image, storage)
        if url:
            names.append(f"image {number}: {image.get('url', '')}")
            parts.append({"type": "image_url", "image_url": {"url": url}})
    if not parts:
        return {}
    return {"role": "user", "content": [{"type": "text", "text": IMAGES_NOTE.format(names="; ".join(names))}, *parts]}


def _data_url(image: dict, storage: Any) -> str:
    """The stored picture as a data URL ('' when it is gone or too big: the text still names it)."""
    try:
        if storage.size(image["path"]) > MAX_IMAGE_BYTES:
            return ""
        with storage.open(image["path"], "rb") as file:
            data = file.read()
    except (OSError, KeyError, ValueError):
        return ""
    return f"data:{image.get('mime') or 'image/png'};base64,{base64.b64encode(data).decode('ascii')}"
