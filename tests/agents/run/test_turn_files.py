"""A message's files in the model's request: a vision model gets the images attached to the message
as image parts of it, any other model is told an image is attached that it cannot see; tables and
documents are named with the tool that reads them; later turns still name an earlier message's files
(without sending its images again); a retry carries the files of the message it sends again."""

from __future__ import annotations

import base64
from pathlib import Path

from asgiref.sync import sync_to_async

from agents.conversations import turn_resend
from agents.llm import LLMClient, build_llm_client
from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.turns import turn_start
from tests.helpers import inline_db
from tests.helpers.events import events_of
from tests.helpers.file_uploads import upload_as
from tests.helpers.files import (
    media,  # noqa: F401 - uploads go to a temporary media directory
    png_bytes,
)
from tests.helpers.scripted_model import openai_client


async def _run(llm, session, text, files=()):
    turn = await sync_to_async(turn_start)(session=session, text=text, files=list(files))
    await Reasoner(llm=llm).run(turn.id)
    return await Turn.objects.aget(pk=turn.id)


@inline_db
async def test_a_vision_model_sees_the_messages_image(model, make_session, alice):
    session = await make_session()
    picture = await sync_to_async(upload_as)(alice, "dot.png", png_bytes())
    table = await sync_to_async(upload_as)(alice)
    vision = LLMClient(openai_client(model, max_retries=0, timeout=5), model="scripted-model", label="v", vision=True)
    try:
        model.reply("A red dot.")
        await _run(vision, session, "What is in the picture?", [picture.id, table.id])
    finally:
        await vision.client.close()
    message = model.last_messages[-1]
    assert message["role"] == "user" and "images" not in message
    text, image = message["content"]
    assert text["type"] == "text" and text["text"].startswith("What is in the picture?")
    assert "dot.png" in text["text"] and "an image, attached below" in text["text"]
    assert "table `sales`" in text["text"] and "files_query" in text["text"]
    prefix = "data:image/png;base64,"
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(image["image_url"]["url"].removeprefix(prefix)) == png_bytes()


@inline_db
async def test_a_tables_columns_are_named_so_a_small_model_need_not_guess_them(llm, model, make_session, alice):
    """A small model (the real-model tier's Qwen 1.5B) asked "which region grew fastest?" guessed a
    `sales` column from the file name; the note names the columns and their types, up to a dozen."""
    session = await make_session()
    table = await sync_to_async(upload_as)(alice, "regions.csv", b"region,quarter,revenue\nWest,Q1,60000\n")
    wide = ",".join(f"c{i}" for i in range(15)).encode() + b"\n" + ",".join("1" * 15).encode() + b"\n"
    wide_table = await sync_to_async(upload_as)(alice, "wide.csv", wide)
    model.reply("Noted.")
    await _run(llm, session, "Which region grew fastest?", [table.id, wide_table.id])
    note = model.last_messages[-1]["content"]
    assert "table `regions` (1 row; columns region VARCHAR, quarter VARCHAR, revenue BIGINT)" in note
    assert "c11 BIGINT and 3 more (files_list)" in note and "c12 " not in note


@inline_db
async def test_another_model_is_told_it_cannot_see_the_image(llm, model, make_session, alice):
    session = await make_session()
    picture = await sync_to_async(upload_as)(alice, "dot.png", png_bytes())
    model.reply("I cannot see it.")
    first = await _run(llm, session, "What is in the picture?", [picture.id])
    message = model.last_messages[-1]
    assert isinstance(message["content"], str) and "images" not in message
    assert "dot.png" in message["content"] and "This model cannot see images" in message["content"]

    model.reply("Still no.")
    await _run(llm, session, "And now?")
    earlier = next(m for m in model.last_messages if m["role"] == "user" and m["content"].startswith("What is in"))
    assert "dot.png" in earlier["content"] and "not shown again" in earlier["content"]

    model.reply("Again.")
    retried = await sync_to_async(turn_resend)(session=session, turn_id=first.id, kind="edit", text="Look again")
    assert [f["fileId"] for f in retried.files] == [picture.id]


@inline_db
async def test_the_offline_model_answers_from_the_files_a_message_carries(make_session, alice, monkeypatch):
    """The sample table and policy PDF sent with the message (not uploaded into the session first):
    the note naming them, the PDF's among them, does not turn a question about the table into reading."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    offline = build_llm_client()
    session = await make_session(mode="data-analysis", execution="agent")
    samples = Path(__file__).resolve().parents[3] / "aptix" / "demo_data"
    table = await sync_to_async(upload_as)(alice, "quarterly_sales.csv", (samples / "quarterly_sales.csv").read_bytes())
    policy = await sync_to_async(upload_as)(alice, "travel_policy.pdf", (samples / "travel_policy.pdf").read_bytes())
    try:
        turn = await _run(offline, session, "Which region grew fastest?", [table.id, policy.id])
    finally:
        await offline.client.close()
    assert turn.status == "completed", turn.error
    assert turn.answer.startswith("**West** grew fastest")
    assert [e["name"] for e in await events_of(turn, "tool.result")] == ["files_list", "files_query", "image_gen"]
