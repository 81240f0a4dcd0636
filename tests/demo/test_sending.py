"""`simulate --outage AT:FOR`: the demo's follower goes quiet, then catches up. Nothing
due inside the window is sent before it ends, and nothing is lost: what it held goes
out, in order, when it ends."""

import pytest

from supervisor.demo.fleet import Fleet
from supervisor.demo.sending import Outages, Pacer, batches, send_fleet

SPEED = 20.0  # virtual seconds per real second: the window below lasts 1.5 s


class RecordingSink:
    def __init__(self, pacer: Pacer):
        self.pacer = pacer
        self.sent: list[tuple[float, list[dict]]] = []  # (virtual time when sent, batch)

    def send(self, events: list[dict]) -> None:
        self.sent.append((self.pacer.virtual_now(), list(events)))


def test_events_due_in_an_outage_are_held_then_sent_in_order_when_it_ends():
    fleet = Fleet(5, tasks=2, durations=0.1)
    pacer = Pacer(SPEED)
    sink = RecordingSink(pacer)
    start, end = 10.0, 40.0
    sent = send_fleet(fleet, sink, pacer, Outages([(start, end)]))

    # Every event went out once, in the fleet's order.
    events = [event for _, batch in sink.sent for event in batch]
    assert sent == len(events) and len({e["id"] for e in events}) == len(events)
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    # Nothing was sent inside the window; the first send after it carried what was due.
    inside = [at for at, _ in sink.sent if start + 0.5 <= at < end - 0.5]
    assert inside == [], f"sent during the outage at virtual {inside}"
    release = next((at, batch) for at, batch in sink.sent if at >= end - 0.5)
    assert release[0] < end + 2, "held events go out as the outage ends"
    assert len(release[1]) > 1, "the outage held events"


def test_an_outage_is_written_at_colon_for():
    assert Outages.parse("100:75") == (100.0, 175.0)
    for wrong in ("100", "a:b", "-1:5", "5:0"):
        with pytest.raises(ValueError, match="--outage"):
            Outages.parse(wrong)
    outages = Outages([(100, 175)])
    assert outages.holding_until(99.9) is None
    assert outages.holding_until(100) == 175
    assert outages.holding_until(175) is None


def test_held_events_are_cut_into_batches_the_api_takes():
    events = [{"id": str(i), "data": {"text": "x" * 2000}} for i in range(1500)]
    cut = list(batches(events))
    assert [e for batch in cut for e in batch] == events
    assert all(len(batch) <= 1000 for batch in cut)
    assert all(sum(len(str(e)) for e in batch) < 1024 * 1024 for batch in cut)
