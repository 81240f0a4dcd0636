"""The web server killed with SIGKILL while clients post events: clients retry each
batch until it is answered; afterwards every event is stored once and the flags are
the history's."""

from __future__ import annotations

import time

from tests.support.faults.clients import Ingest
from tests.support.faults.expect import batches, expected_flags, history, settle, stored_once

KILLS = 3


def test_web_killed_mid_ingest(stack, figures):
    made = history(tasks=200, seed=11)
    token = stack.create_source("orchestrator")
    web = stack.start_web()
    stack.start_worker()
    stack.start_beat()
    ingest = Ingest(stack.port, token, batches(made.events, 20), clients=3).start()
    for k in range(KILLS):
        ingest.wait_done((k + 1) / (KILLS + 1))
        # Requests are in flight when it dies: three clients post back to back.
        stack.kill(web)
        time.sleep(0.5)  # refused connections meanwhile
        web = stack.start_web()
    tally = ingest.join()
    assert not tally.problems, tally.problems[:5]
    stored = stored_once(stack, "orchestrator", tally.events)
    settled = settle(stack, expected_flags(made))
    figures.update(
        kills=KILLS,
        **tally.figures(),
        **stored,
        flags_expected=len(made.expected),
        flags_open=len(stack.open_flags()),
        flag_rows=sum(stack.flag_rows().values()),
        settled_s=round(settled, 1),
    )
    assert stored == {"stored": tally.events, "lost": 0, "doubled": 0}
    assert tally.statuses[500] == 0
    # Every kill cut at least one client off: it reconnected and sent its batch again.
    assert sum(tally.connection_errors.values()) >= KILLS
