"""Screenshots of the overview, the task list and a task page, light and dark (1280×800).

A generator, not a test: its name keeps it out of `make test`, and `make screenshots`
runs it with SUPERVISOR_UPDATE_SCREENSHOTS=1 to write the pictures in docs/screenshots/
(shown in the README). Run by hand without that variable, it takes them into a
temporary folder and checks only that the pages render at that size.
The data is seed000, posted through the API: the same tasks, texts and flags each time
(only the times at which the flags opened and the source was last heard differ).
"""

import os
import struct
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.browser import LATEST_TEXT, SCHEMES, VIEWPORT, log_in, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
MAX_BYTES = 400 * 1024


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_screenshots(new_page, live_app, acting_user, source, scheme, tmp_path):
    seeded = seed(live_app, source)
    folder = SCREENSHOTS if os.environ.get("SUPERVISOR_UPDATE_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    page = new_page(scheme)
    log_in(page, acting_user, "/")
    shots = {
        "overview": ("/", page.locator("#overview-counts")),
        "list": ("/tasks/", page.locator("#task-rows")),
        "detail": (f"/tasks/{seeded.task_pk}/", page.locator("#results .card.latest")),
    }
    for name, (path, ready) in shots.items():
        page.goto(path)
        expect(ready).to_be_visible()
        wait_for_socket(page)
        if name == "detail":
            expect(ready).to_contain_text(LATEST_TEXT)
        page.mouse.move(0, VIEWPORT["height"] - 1)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        target = folder / f"{name}-{scheme}.png"
        page.screenshot(path=target, animations="disabled", caret="hide")
        assert png_size(target) == (VIEWPORT["width"], VIEWPORT["height"])
        assert target.stat().st_size < MAX_BYTES, f"{target} is {target.stat().st_size} bytes"
