"""image_gen's remote backend end to end: with a real (non-offline) provider configured, the
reasoner's image_gen calls the provider's Images API through the same SDK client as the chat."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from tests.helpers import inline_db

pytestmark = inline_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def png(size=(96, 64)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


async def tool_results(turn) -> list[dict]:
    return [e.payload async for e in turn.events.filter(type="tool.result").order_by("seq")]


async def test_a_picture_request_goes_to_the_images_api(make_session, run_turn, model, media_root, settings):
    settings.APTIX_IMAGE_MODEL = "image-model-x"
    model.reply("", tool_calls=[("image_gen", {"prompt": "A red fox in the snow", "size": "512x512"})])
    model.image(png())
    model.reply("Here is your fox.")
    turn = await run_turn(await make_session(execution="agent"), text="Draw a fox")
    assert turn.status == "completed"
    assert model.image_requests == [
        {"model": "image-model-x", "prompt": "A red fox in the snow", "size": "512x512", "n": 1}
    ]
    [result] = await tool_results(turn)
    data = json.loads(result["result"])
    assert result["ok"] and data["backend"] == "remote" and (data["width"], data["height"]) == (96, 64)
    stored = media_root / data["url"].removeprefix("/media/")
    assert stored.read_bytes() == png()


async def test_charts_stay_local_with_a_provider(make_session, run_turn, model):
    model.reply(
        "", tool_calls=[("image_gen", {"prompt": "Sales", "kind": "bar", "labels": ["a", "b"], "values": [1, 2]})]
    )
    model.reply("Chart drawn.")
    turn = await run_turn(await make_session(execution="agent"))
    [result] = await tool_results(turn)
    assert json.loads(result["result"])["backend"] == "local" and model.image_requests == []


async def test_a_provider_without_the_image_model_or_endpoint_says_so(make_session, run_turn, model, settings, caplog):
    """llama.cpp's server has no Images API: the admins' log said the chat model was not found ("The model
    'local' was not found … Check APTIX_LLM_MODEL"), which it was not."""
    settings.APTIX_IMAGE_MODEL = "image-model-x"
    model.reply("", tool_calls=[("image_gen", {"prompt": "A red fox"})])
    model.image_error(404, "Not Found")
    model.reply("No picture, sorry.")
    with caplog.at_level("ERROR", logger="aptix.admin"):
        turn = await run_turn(await make_session(execution="agent"))
    [result] = await tool_results(turn)
    assert not result["ok"]  # the model gets the tool's own words; the admins' log says why
    [logged] = [r.getMessage() for r in caplog.records if r.name == "aptix.admin"]
    assert "has no image model 'image-model-x' or no Images API (HTTP 404)" in logged
    assert "APTIX_IMAGE_MODEL" in logged and "APTIX_LLM_MODEL" not in logged


async def test_a_failing_images_api_is_a_clean_tool_error(make_session, run_turn, model):
    model.reply("", tool_calls=[("image_gen", {"prompt": "A red fox"})])
    model.image_error(500, "image backend exploded")
    model.reply("Sorry, no picture.")
    turn = await run_turn(await make_session(execution="agent"))
    assert turn.status == "completed" and turn.answer == "Sorry, no picture."
    [result] = await tool_results(turn)
    assert not result["ok"] and "image" in result["error"].lower()
    assert "exploded" not in result["error"]  # provider internals stay in the log
    assert json.loads(model.last_messages[-1]["content"])["error"] == result["error"]
