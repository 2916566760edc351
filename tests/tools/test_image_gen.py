"""image_gen: local charts and cards, the injected remote provider, validation and failures."""

from __future__ import annotations

import asyncio
import io
import json
import re

import pytest
from django.core.files.storage import FileSystemStorage, default_storage
from PIL import Image

from tools.base import ToolContext
from tools.builtin import image_gen
from tools.builtin.image_gen import ERROR_FAILED, LOG_TAG, ImageGenTool
from tools.registry import ToolRegistry, build_internal_registry

SESSION_ID = "5e55" * 8
# Stored under the session it was drawn for: the media view serves it to whoever may see that session.
URL_RE = re.compile(rf"^/media/images/{SESSION_ID}/[0-9a-f]{{32}}\.png$")
CONTEXT = ToolContext(session_id=SESSION_ID, org=None, user=None)
LABELS = ["Q1", "Q2", "Q3", "Q4"]
VALUES = [120.5, 98, 143, 170]


@pytest.fixture
def storage(tmp_path):
    return FileSystemStorage(location=tmp_path, base_url="/media/")


@pytest.fixture
def tool(recording_logger, storage):
    return ImageGenTool(recording_logger, storage=storage)


def png_bytes(size=(64, 48), colour=(10, 120, 200), fmt="PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format=fmt)
    return buffer.getvalue()


class FakeRemote:
    def __init__(self, data: bytes | None = None, error: Exception | None = None):
        self.data = png_bytes() if data is None else data
        self.error = error
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, prompt: str, size: str) -> bytes:
        self.calls.append((prompt, size))
        if self.error:
            raise self.error
        return self.data


def stored_files(tmp_path) -> list:
    folder = tmp_path / "images" / SESSION_ID
    return sorted(folder.iterdir()) if folder.exists() else []


def open_result(result, tmp_path):
    assert result.successful is True, result.error_message
    payload = json.loads(result.result)
    assert set(payload) == {"url", "alt", "kind", "width", "height", "backend"}
    assert URL_RE.match(payload["url"]), payload["url"]
    path = tmp_path / "images" / SESSION_ID / payload["url"].rsplit("/", 1)[1]
    image = Image.open(path)
    image.load()
    return payload, image


# --- contract ---------------------------------------------------------------------------------------


def test_registers_in_a_registry_with_a_logger(recording_logger):
    registry = ToolRegistry(logger=recording_logger)
    registry.register(ImageGenTool)
    assert "image_gen" in registry
    assert recording_logger.errors == []
    assert build_internal_registry().get("image_gen") is ImageGenTool


def test_schema_shape():
    schema = ImageGenTool.get_schema()
    function = schema["function"]
    assert function["name"] == ImageGenTool.TOOL_NAME == "image_gen"
    params = function["parameters"]
    assert params["additionalProperties"] is False
    assert params["required"] == ["prompt"]
    props = params["properties"]
    assert set(props) == {"prompt", "kind", "title", "labels", "values", "size"}
    assert props["kind"]["enum"] == ["bar", "line", "pie", "card"]
    assert props["size"]["enum"] == ["512x512", "1024x1024", "1024x768"]
    assert props["labels"]["items"] == {"type": "string"}
    assert props["values"]["items"] == {"type": "number"}
    assert ImageGenTool.is_tool_fully_executed_on_server is True


def test_usage_metadata_carries_the_guidance():
    usage = ImageGenTool.TOOL_USAGE_METADATA
    for phrase in ["draw, illustrate, chart or plot", "'labels' and 'values'", "Do not call it for plain text"]:
        assert phrase in usage


def test_constructor_needs_a_logger_and_defaults_to_the_default_storage(recording_logger):
    with pytest.raises(ValueError, match="logger"):
        ImageGenTool(None)
    tool = ImageGenTool(recording_logger)
    assert tool._storage is default_storage
    assert tool._remote is None


# --- local rendering ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["bar", "line", "pie"])
async def test_charts_are_real_png_files(tool, tmp_path, recording_logger, kind):
    args = {"prompt": "Quarterly revenue", "kind": kind, "labels": LABELS, "values": VALUES, "size": "512x512"}
    result = await tool.execute(json.dumps(args), CONTEXT)
    payload, image = open_result(result, tmp_path)
    assert image.format == "PNG"
    assert image.size == (512, 512)
    assert payload == {
        **payload,
        "alt": "Quarterly revenue",
        "kind": kind,
        "width": 512,
        "height": 512,
        "backend": "local",
    }
    assert len(image.convert("RGB").getcolors(1 << 20)) > 10  # something was drawn, not a blank canvas
    assert recording_logger.exceptions == [] and recording_logger.errors == []


async def test_chart_defaults_to_bar_and_uses_the_title_as_alt(tool, tmp_path):
    args = {
        "prompt": "revenue by quarter",
        "title": "Revenue ($k, 2024)",
        "labels": LABELS,
        "values": VALUES,
        "size": "512x512",
    }
    payload, _image = open_result(await tool.execute(json.dumps(args), CONTEXT), tmp_path)
    assert payload["kind"] == "bar"
    assert payload["alt"] == "Revenue ($k, 2024)"  # a '$' is literal text, not mathtext


async def test_chart_accepts_numeric_labels_and_many_points(tool, tmp_path):
    args = {
        "prompt": "Yearly",
        "kind": "line",
        "labels": list(range(2000, 2050)),
        "values": list(range(50)),
        "size": "512x512",
    }
    payload, image = open_result(await tool.execute(json.dumps(args), CONTEXT), tmp_path)
    assert payload["kind"] == "line" and image.size == (512, 512)


async def test_card_from_a_prompt_alone_uses_the_default_size(tool, tmp_path):
    result = await tool.execute(json.dumps({"prompt": "  A lighthouse on a cliff at dawn  "}), CONTEXT)
    payload, image = open_result(result, tmp_path)
    assert image.format == "PNG"
    assert image.size == (1024, 768)
    assert payload["kind"] == "card" and payload["backend"] == "local"
    assert payload["alt"] == "A lighthouse on a cliff at dawn"
    assert (payload["width"], payload["height"]) == (1024, 768)
    assert len(image.convert("RGB").getcolors(1 << 20)) > 2  # background plus text


async def test_kind_card_makes_a_card_even_with_data(tool, tmp_path):
    args = {
        "prompt": "Team offsite",
        "title": "Offsite 2025",
        "kind": "card",
        "labels": ["a"],
        "values": [1],
        "size": "512x512",
    }
    payload, image = open_result(await tool.execute(json.dumps(args), CONTEXT), tmp_path)
    assert payload["kind"] == "card" and payload["alt"] == "Offsite 2025"
    assert image.size == (512, 512)


async def test_a_very_long_prompt_still_fits_on_a_card(tool, tmp_path):
    args = {"prompt": "supercalifragilistic " * 190, "size": "512x512"}
    _payload, image = open_result(await tool.execute(json.dumps(args), CONTEXT), tmp_path)
    assert image.size == (512, 512)


async def test_concurrent_charts_all_succeed(tool, tmp_path):
    args = [
        json.dumps({"prompt": f"Chart {i}", "kind": kind, "labels": LABELS, "values": VALUES, "size": "512x512"})
        for i, kind in enumerate(["bar", "line", "pie", "bar"])
    ]
    results = await asyncio.gather(*(tool.execute(a, CONTEXT) for a in args))
    assert all(r.successful for r in results)
    assert len({json.loads(r.result)["url"] for r in results}) == 4
    assert len(stored_files(tmp_path)) == 4


# --- remote provider ---------------------------------------------------------------------------------


async def test_remote_is_called_with_prompt_and_size(recording_logger, storage, tmp_path):
    remote = FakeRemote(png_bytes((80, 60)))
    tool = ImageGenTool(recording_logger, storage=storage, remote=remote)
    result = await tool.execute(json.dumps({"prompt": "A red fox in the snow", "size": "1024x1024"}), CONTEXT)
    payload, image = open_result(result, tmp_path)
    assert remote.calls == [("A red fox in the snow", "1024x1024")]
    assert payload["backend"] == "remote"
    assert payload["alt"] == "A red fox in the snow"
    assert (payload["width"], payload["height"]) == image.size == (80, 60)
    path = stored_files(tmp_path)[0]
    assert path.read_bytes() == remote.data  # stored as given


async def test_remote_gets_the_default_size(recording_logger, storage, tmp_path):
    remote = FakeRemote()
    tool = ImageGenTool(recording_logger, storage=storage, remote=remote)
    open_result(await tool.execute(json.dumps({"prompt": "A fox"}), CONTEXT), tmp_path)
    assert remote.calls == [("A fox", "1024x768")]


async def test_remote_jpeg_is_stored_as_png(recording_logger, storage, tmp_path):
    remote = FakeRemote(png_bytes((40, 30), fmt="JPEG"))
    tool = ImageGenTool(recording_logger, storage=storage, remote=remote)
    _payload, image = open_result(await tool.execute(json.dumps({"prompt": "A fox"}), CONTEXT), tmp_path)
    assert image.format == "PNG" and image.size == (40, 30)


@pytest.mark.parametrize("extra", [{"labels": LABELS, "values": VALUES}, {"kind": "card"}])
async def test_remote_is_not_used_for_charts_or_cards(recording_logger, storage, tmp_path, extra):
    remote = FakeRemote()
    tool = ImageGenTool(recording_logger, storage=storage, remote=remote)
    args = {"prompt": "Quarterly revenue", "size": "512x512", **extra}
    payload, _image = open_result(await tool.execute(json.dumps(args), CONTEXT), tmp_path)
    assert remote.calls == []
    assert payload["backend"] == "local"
    assert payload["kind"] == ("bar" if "labels" in extra else "card")


@pytest.mark.parametrize(
    "remote",
    [
        FakeRemote(error=RuntimeError("provider said: invalid api key sk-secret")),
        FakeRemote(data=b"not an image at all"),
        FakeRemote(data=b""),
    ],
)
async def test_remote_failures_are_logged_and_generic(recording_logger, storage, tmp_path, remote):
    tool = ImageGenTool(recording_logger, storage=storage, remote=remote)
    result = await tool.execute(json.dumps({"prompt": "A fox"}), CONTEXT)
    assert result.successful is False
    assert result.error_message == ERROR_FAILED == "image_gen could not create the image."
    assert "sk-secret" not in result.content_for_model()
    [(_exc, tag, fields)] = recording_logger.exceptions
    assert tag == LOG_TAG == "ImageGenTool.Render"
    assert fields["session_id"] == SESSION_ID and fields["backend"] == "remote"
    assert stored_files(tmp_path) == []


# --- validation --------------------------------------------------------------------------------------

MANY = [str(i) for i in range(51)]


@pytest.mark.parametrize(
    "arguments_json, message",
    [
        (None, "image_gen requires a non-empty 'prompt' string."),
        ("", "image_gen requires a non-empty 'prompt' string."),
        ("{}", "image_gen requires a non-empty 'prompt' string."),
        ('{"prompt": "   "}', "image_gen requires a non-empty 'prompt' string."),
        ('{"prompt": 42}', "image_gen requires a non-empty 'prompt' string."),
        ('{"prompt": "x" ', "valid JSON object"),
        ('["prompt"]', "valid JSON object"),
        ("null", "valid JSON object"),
        (json.dumps({"prompt": "x" * 4001}), "at most 4000 characters"),
        (json.dumps({"prompt": "p", "style": "noir"}), "does not accept 'style'"),
        (json.dumps({"prompt": "p", "title": 7}), "'title' to be a string"),
        (json.dumps({"prompt": "p", "kind": "scatter"}), "'kind' to be one of bar, line, pie, card"),
        (json.dumps({"prompt": "p", "size": "800x600"}), "'size' to be one of 512x512, 1024x1024, 1024x768"),
        (json.dumps({"prompt": "p", "labels": ["a", "b"]}), "requires 'values' whenever 'labels' are given"),
        (json.dumps({"prompt": "p", "values": [1, 2]}), "requires 'labels' whenever 'values' are given"),
        (
            json.dumps({"prompt": "p", "labels": ["a", "b"], "values": [1]}),
            "image_gen requires 'labels' and 'values' of the same length.",
        ),
        (
            json.dumps({"prompt": "p", "labels": ["a", "b"], "values": [1, "2"]}),
            "'values' to be an array of finite numbers",
        ),
        (json.dumps({"prompt": "p", "labels": ["a"], "values": [True]}), "'values' to be an array of finite numbers"),
        ('{"prompt": "p", "labels": ["a"], "values": [NaN]}', "'values' to be an array of finite numbers"),
        (json.dumps({"prompt": "p", "labels": ["a"], "values": 3}), "'values' to be an array of finite numbers"),
        (json.dumps({"prompt": "p", "labels": [{"a": 1}], "values": [1]}), "'labels' to be an array of strings"),
        (json.dumps({"prompt": "p", "labels": MANY, "values": list(range(51))}), "at most 50"),
        (json.dumps({"prompt": "p", "kind": "pie", "labels": ["a", "b"], "values": [3, -1]}), "non-negative"),
        (json.dumps({"prompt": "p", "kind": "pie", "labels": ["a", "b"], "values": [0, 0]}), "total above zero"),
    ],
)
async def test_invalid_arguments_give_clean_errors(recording_logger, storage, tmp_path, arguments_json, message):
    remote = FakeRemote()
    tool = ImageGenTool(recording_logger, storage=storage, remote=remote)
    result = await tool.execute(arguments_json, CONTEXT)
    assert result.successful is False
    assert message in result.error_message
    assert result.error_message.startswith("image_gen ")
    assert remote.calls == []
    assert stored_files(tmp_path) == []
    assert recording_logger.exceptions == [] and recording_logger.errors == []


# --- failures ----------------------------------------------------------------------------------------


class BrokenStorage(FileSystemStorage):
    def save(self, name, content, max_length=None):
        raise OSError("disk full at /srv/aptix/media")


async def test_storage_failure_is_logged_and_generic(recording_logger, tmp_path):
    tool = ImageGenTool(recording_logger, storage=BrokenStorage(location=tmp_path, base_url="/media/"))
    args = {"prompt": "Quarterly revenue", "labels": LABELS, "values": VALUES, "size": "512x512"}
    result = await tool.execute(json.dumps(args), CONTEXT)
    assert result.successful is False
    assert result.error_message == ERROR_FAILED
    assert "/srv/aptix" not in result.content_for_model()
    [(exc, tag, fields)] = recording_logger.exceptions
    assert isinstance(exc, OSError)
    assert tag == "ImageGenTool.Render"
    assert fields == {"session_id": SESSION_ID, "backend": "local", "kind": "bar"}


async def test_renderer_failure_is_logged_and_generic(recording_logger, storage, tmp_path, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("font cache corrupted")

    monkeypatch.setattr(image_gen, "render_card", explode)
    tool = ImageGenTool(recording_logger, storage=storage)
    result = await tool.execute(json.dumps({"prompt": "A card"}), CONTEXT)
    assert result.successful is False
    assert result.error_message == ERROR_FAILED
    [(exc, tag, fields)] = recording_logger.exceptions
    assert str(exc) == "font cache corrupted" and tag == LOG_TAG
    assert fields["kind"] == "card" and fields["session_id"] == SESSION_ID
    assert stored_files(tmp_path) == []
