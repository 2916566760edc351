"""Files in a real browser, with the built-in offline model: the attach button uploads at once with a
progress bar, each file a chip (name, size) removable before sending; drag & drop and paste attach
too; a refused upload shows the server's reason on its chip; the sent message shows its files (a
table's first rows, an image's thumbnail, a download link); the Files panel lists and deletes; the
pages stay free of axe violations."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from files.models import SessionFile
from tests.helpers import async_db
from tests.helpers.file_uploads import SALES_CSV
from tests.helpers.files import executable_bytes, png_bytes

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

UPLOAD_LIMIT = 600_000
SAMPLES = Path(__file__).resolve().parents[2] / "aptix" / "demo_data"

# Every upload's progress events, as the page's XHR saw them (an init script: the CSP forbids inline code).
PROGRESS_PROBE = """
window.__uploadProgress = [];
const open = XMLHttpRequest.prototype.open;
XMLHttpRequest.prototype.open = function (method, url) {
  if (String(url).endsWith("/files/")) {
    this.upload.addEventListener("progress", (e) => window.__uploadProgress.push([e.loaded, e.total]));
  }
  return open.apply(this, arguments);
};
"""
# Files built in the page (drag & drop and paste carry File objects, not paths).
DROP = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "text/csv"}));
  for (const type of ["dragenter", "dragover", "drop"]) {
    document.body.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: data}));
  }
}"""
PASTE = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "text/csv"}));
  document.getElementById("message").dispatchEvent(
    new ClipboardEvent("paste", {bubbles: true, cancelable: true, clipboardData: data}));
}"""


@pytest.fixture(scope="module")
def daphne_env() -> dict[str, str]:
    return {"APTIX_UPLOAD_MAX_BYTES": str(UPLOAD_LIMIT)}


def chips(page):
    return page.locator("#composer .file-chip, #new-session .file-chip")


def big_csv(rows: int) -> bytes:
    return b"region,q2,q3\n" + b"".join(b"Region%d,%d,%d\n" % (i, i, i * 2) for i in range(rows))


async def test_attach_shows_progress_and_chips_removable_before_sending(sign_in, alice, make_session, tmp_path):
    session = await make_session(mode="data-analysis", execution="agent")
    page = await sign_in(alice)
    await page.add_init_script(PROGRESS_PROBE)
    await open_session(page, session.id)
    large = tmp_path / "large.csv"
    large.write_bytes(big_csv(20_000))  # about 400 KB: the upload reports its progress
    released = []

    async def slow_upload(route):  # held until the test has seen the chip uploading
        while not released:
            await page.wait_for_timeout(50)
        await route.continue_()

    await page.route("**/files/", slow_upload)
    async with page.expect_file_chooser() as chooser_info:
        await page.get_by_role("button", name="Attach files").click()
    chooser = await chooser_info.value
    await chooser.set_files(str(large))
    chip = chips(page).first
    await expect(chip).to_contain_text("large.csv")
    await expect(chip.locator("progress")).to_be_visible()
    await expect(page.get_by_role("progressbar", name="Uploading large.csv")).to_be_visible()
    # caret="initial": Playwright hides the caret by setting each input's inline style, leaving
    # style="" behind, which htmx's settling of the sent turn's swaps would copy (a CSP violation).
    await page.screenshot(path=str(ARTIFACTS / "files-chip-uploading.png"), caret="initial")
    await send(page, "Sum it")  # sending waits for the upload, and says so
    await expect(page.locator("#composer-error")).to_have_text("Sends as soon as the files finish uploading.")
    await expect(turns(page)).to_have_count(0)
    await expect(page.locator("#message")).to_have_value("Sum it")
    released.append(True)
    # ... and goes by itself once the upload has finished, with the file.
    await expect(turns(page)).to_have_count(1)
    await expect(turns(page).first.locator(".msg-user")).to_contain_text("Sum it")
    await expect(turns(page).first.locator(".turn-files .turn-file")).to_contain_text("large.csv")
    await expect(page.locator("#composer-error")).to_have_text("")
    await expect(chips(page)).to_have_count(0)
    progress = await page.evaluate("() => window.__uploadProgress")
    assert progress and progress[-1][0] == progress[-1][1] > large.stat().st_size
    await turn_ended(turns(page).first)

    # Removed before sending: the chip goes, and so does the uploaded file.
    async with page.expect_file_chooser() as chooser_info:
        await page.get_by_role("button", name="Attach files").click()
    await (await chooser_info.value).set_files(str(large))
    chip = chips(page).first
    await expect(chip).to_have_class(re.compile(r"\bdone\b"))
    await expect(chip.locator("progress")).to_have_count(0)
    await expect(chip).to_contain_text("KB")
    file_id = await chip.locator("input[name=files]").get_attribute("value")
    await chip.get_by_role("button", name="Remove large.csv").click()
    await expect(chips(page)).to_have_count(0)
    await expect(page.locator("#attach-button")).to_be_focused()
    for _ in range(50):
        if (await SessionFile.objects.aget(pk=file_id)).deleted_at is not None:
            break
        await page.wait_for_timeout(100)
    assert (await SessionFile.objects.aget(pk=file_id)).deleted_at is not None


async def test_drop_and_paste_attach_and_the_message_shows_its_files(sign_in, alice, make_session, tmp_path):
    session = await make_session(mode="data-analysis", execution="agent")
    page = await sign_in(alice, **AXE_PAGE)
    await open_session(page, session.id)
    await page.evaluate(DROP, ["sales.csv", SALES_CSV.decode()])
    await expect(chips(page).first).to_have_class(re.compile(r"\bdone\b"))
    await page.locator("#message").focus()
    await page.evaluate(PASTE, ["pasted.csv", "name,n\nA,1\n"])
    await expect(chips(page)).to_have_count(2)
    await expect(chips(page).nth(1)).to_have_class(re.compile(r"\bdone\b"))
    picture = tmp_path / "dot.png"
    picture.write_bytes(png_bytes((40, 30)))
    await page.locator("#attach-input").set_input_files(str(picture))
    await expect(chips(page).nth(2)).to_have_class(re.compile(r"\bdone\b"))
    await page.screenshot(path=str(ARTIFACTS / "files-chips.png"))
    assert await violations(page) == []

    await send(page, "What is in these files?")
    await expect(chips(page)).to_have_count(0)  # sent with the message
    turn = turns(page).first
    files = turn.locator(".turn-files .turn-file")
    await expect(files).to_have_count(3)
    await expect(files.nth(0)).to_contain_text("sales.csv")
    await expect(files.nth(0).locator("td", has_text="North")).to_be_visible()  # the table's first rows
    thumbnail = files.nth(2).locator("img")
    await expect(thumbnail).to_have_attribute("alt", "dot.png")
    await page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=await thumbnail.element_handle())
    await turn_ended(turn)
    await page.screenshot(path=str(ARTIFACTS / "files-turn.png"), full_page=True)

    async with page.expect_download() as download_info:
        await files.nth(0).get_by_role("link", name="sales.csv").click()
    download = await download_info.value
    assert download.suggested_filename == "sales.csv"
    assert (await sync_to_async(open)(await download.path(), "rb")).read() == SALES_CSV

    await page.get_by_role("button", name="Files", exact=True).click()
    panel = page.locator("#files-panel")
    await expect(panel.locator(".file-list li")).to_have_count(3)
    await page.screenshot(path=str(ARTIFACTS / "files-panel.png"))
    assert await violations(page) == []
    page.once("dialog", lambda dialog: dialog.accept())
    await panel.get_by_role("button", name="Delete pasted.csv").click()
    await expect(panel.locator(".file-list li")).to_have_count(2)
    assert await SessionFile.objects.filter(session_id=session.id, deleted_at__isnull=True).acount() == 2
    # By keyboard, the focus goes to the next file's Delete, then to the panel.
    await expect(panel.get_by_role("button", name="Delete dot.png")).to_be_focused()
    for name, then in (("dot.png", "Delete sales.csv"), ("sales.csv", None)):
        page.once("dialog", lambda dialog: dialog.accept())
        await panel.get_by_role("button", name=f"Delete {name}").focus()
        await page.keyboard.press("Enter")
        if then:
            await expect(panel.get_by_role("button", name=then)).to_be_focused()
    await expect(panel.get_by_role("heading", name="Files in this session")).to_be_focused()
    await expect(page.locator("body")).not_to_be_focused()


async def test_a_refused_upload_says_why_on_its_chip(sign_in, alice, make_session, tmp_path):
    session = await make_session()
    page = await sign_in(alice)
    await open_session(page, session.id)
    program = tmp_path / "report.csv"
    program.write_bytes(executable_bytes())
    huge = tmp_path / "huge.csv"
    huge.write_bytes(big_csv(60_000))  # over the module's limit
    released = asyncio.Event()
    sent = []

    async def held_upload(route):  # held until the message is queued behind it
        sent.append(route.request)
        await released.wait()
        await route.continue_()

    await page.route("**/files/", held_upload)
    await page.locator("#attach-input").set_input_files([str(program), str(huge)])
    await send(page, "Read them")  # queued behind the uploads...
    await expect(page.locator("#composer-error")).to_have_text("Sends as soon as the files finish uploading.")
    released.set()
    # ... and not sent when they end refused: the message stays, and the line says why.
    await expect(page.locator("#composer-error")).to_contain_text("Not sent: a file failed to upload")
    await expect(turns(page)).to_have_count(0)
    await expect(page.locator("#message")).to_have_value("Read them")
    refused = chips(page).filter(has_text="report.csv")
    await expect(refused).to_have_class(re.compile(r"\bfailed\b"))
    await expect(refused.get_by_role("alert")).not_to_be_empty()
    too_big = chips(page).filter(has_text="huge.csv")
    await expect(too_big.get_by_role("alert")).to_have_text("The file is larger than the upload limit of 586 KB.")
    # ... refused in the browser before a byte was sent: only report.csv went to the server.
    assert len(sent) == 1 and b"report.csv" in sent[0].post_data_buffer
    await page.screenshot(path=str(ARTIFACTS / "files-refused.png"))
    await too_big.get_by_role("button", name="Remove huge.csv").click()
    await refused.get_by_role("button", name="Remove report.csv").click()
    await expect(chips(page)).to_have_count(0)

    # An empty file is refused with the reason; a table with only its header says "0 rows".
    empty, header = tmp_path / "empty.csv", tmp_path / "header.csv"
    empty.write_bytes(b"")
    header.write_bytes(b"region,revenue\n")
    await page.unroute("**/files/")
    await page.locator("#attach-input").set_input_files([str(empty), str(header)])
    await expect(chips(page).filter(has_text="empty.csv").get_by_role("alert")).to_have_text(
        "“empty.csv” is empty: there is nothing in it to read. Attach the file it should be."
    )
    only_header = chips(page).filter(has_text="header.csv")
    await expect(only_header).to_have_class(re.compile(r"\bdone\b"))
    await expect(only_header.locator(".file-note")).to_have_text("0 rows: only the column names")


async def test_the_new_session_composer_attaches_before_the_session_exists(sign_in, alice, tmp_path):
    page = await sign_in(alice)
    table = tmp_path / "sales.csv"
    table.write_bytes(SALES_CSV)
    await page.locator("#attach-input").set_input_files(str(table))
    await expect(chips(page).first).to_have_class(re.compile(r"\bdone\b"))
    file_id = await chips(page).first.locator("input[name=files]").get_attribute("value")
    assert (await SessionFile.objects.aget(pk=file_id)).session_id is None  # the uploader's, in no session yet
    await send(page, "Summarise this table")
    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    await expect(turns(page).first.locator(".turn-file")).to_contain_text("sales.csv")
    stored = await SessionFile.objects.aget(pk=file_id)
    assert stored.session_id and page.url.endswith(f"/sessions/{stored.session_id}/")


async def test_the_readme_tour_attach_the_samples_and_ask_which_region_grew_fastest(sign_in, alice):
    """A new user's first files questions, as the README's tour has them, with the built-in offline
    model: the sample CSV and PDF attached on the new-session page, Data Analysis and Agent, "which
    region grew fastest?": the right region, its figures and a chart; then the policy on hotels."""
    page = await sign_in(alice)
    await page.select_option("#id_mode", "data-analysis")
    await page.locator("#new-session").get_by_text("Agent", exact=True).click()
    async with page.expect_file_chooser() as chooser_info:
        await page.get_by_role("button", name="Attach files").click()
    samples = [str(SAMPLES / "quarterly_sales.csv"), str(SAMPLES / "travel_policy.pdf")]
    await (await chooser_info.value).set_files(samples)
    await expect(page.locator("#new-session .file-chip.done")).to_have_count(2)
    await send(page, "which region grew fastest?")
    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    turn = turns(page).first
    await turn_ended(turn)
    answer = turn.locator(".answer")
    await expect(answer).to_contain_text("West grew fastest: from 60000 to 93000 (+33000, 55.0%)")
    chart = turn.locator(".answer img, .item-image img").first
    await expect(chart).to_be_visible()
    await page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=await chart.element_handle())
    await expect(turn.locator(".tool-card .tool-name")).to_contain_text(["files_list", "files_query", "image_gen"])
    await expect(turn.locator(".turn-file")).to_contain_text(["quarterly_sales.csv", "travel_policy.pdf"])
    await expect(turn.locator(".turn-file").nth(1)).to_contain_text("pages")  # the document's page count

    await send(page, "What does the travel policy say about hotels?")
    second = turns(page).nth(1)
    await turn_ended(second)
    await expect(second.locator(".answer")).to_contain_text("180 euros a night")
    await expect(second.locator(".tool-card .tool-name")).to_contain_text(["files_list", "files_read"])
