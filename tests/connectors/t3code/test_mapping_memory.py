"""The mapping's memory as the follower stores it beside its cursor: a dict of sections,
read into the typed `Memory` and given back the same. A memory stored by the mapper
before its memory was typed must load unchanged, round-trip, and go on being followed."""

from __future__ import annotations

import copy
import json

from supervisor.connectors.t3code.mapping import Mapper, event_id
from supervisor.connectors.t3code.mapping.ids import digest
from supervisor.connectors.t3code.mapping.memory import SECTIONS, Memory
from supervisor.connectors.t3code.schema import Row

PARENT = "thread-parent"
CHILD = "thread-child"
TASK = "task-1"
RUN = "run:thread:thread-parent:ordinal:1"
CHILD_RUN = "run:thread:thread-child:ordinal:1"

# The shape the mapper stored before (its sections in the order it made them), with
# entries written by older versions still: a failure without its class, a task from
# before delegate_task calls were read (no `request`, `told`), a key no version knows.
STORED = {
    "tasks": {
        TASK: {
            "parent": PARENT,
            "run": RUN,
            "child": CHILD,
            "at": "2026-12-02T10:00:01.000Z",
            "status": "running",
            "result": None,
            "result_run": None,
            "waits": None,
        },
        "task-0": {
            "parent": PARENT,
            "run": RUN,
            "child": "thread-child-0",
            "at": "2026-12-02T09:00:00.000Z",
            "status": "completed",
            "result": "Done.",
            "result_run": "run:thread:thread-child-0:ordinal:1",
            "waits": False,
            "request": "req-0",
            "told": "thread-child-0",
            "told_request": "req-0",
            "record": "delivered",
            "cut": None,
            "settled": ["delivered", "2026-12-02T09:05:00.000Z", None],
            "wakes": {"msg-wake": ["msg-wake", "run:thread:thread-parent:ordinal:2"]},
        },
    },
    "children": {CHILD: TASK, "thread-child-0": "task-0"},
    "natives": {
        "native-1": {
            "thread": PARENT,
            "item": "native-1",
            "run": RUN,
            "generation": 1,
            "finished": False,
            "child": None,
            "title": "Explore",
        }
    },
    "rosters": {
        "provider-1": {"thread": PARENT, "tasks": {"bash-1": ["command", "npm test", None]}}
    },
    "departed": {
        PARENT: [["thread-parent:bg:bash-0", "command", "ls", None, "2026-12-02T09:10:00.000Z"]]
    },
    "messages": {"msg-wake": [["msg-wake"], 1], "msg-start": "m"},
    "runs": {
        RUN: {"requested": True, "started": True, "activity": 59_000_000},
        "run:thread:thread-parent:ordinal:3": {
            "requested": False,
            "started": False,
            "activity": None,
            "held": {
                "id": "run:thread:thread-parent:ordinal:3",
                "threadId": PARENT,
                "ordinal": 3,
                "requestedAt": "2026-12-02T10:00:03.000Z",
                "userMessageId": "msg-later",
            },
        },
    },
    "texts": {RUN: ["2026-12-02T10:00:02.000Z", "Working on it."]},
    "pending": {"msg-later": ["run:thread:thread-parent:ordinal:3"]},
    "transfers": {"transfer-0": 3},
    "errors": {},
    "failures": {"run:thread:thread-child-9:ordinal:1": ["thread-child-9", "Boom."]},
    "classes": {},
    "requests": {"req-0": {"thread": PARENT, "run": RUN, "title": "Old task", "task": "task-0"}},
    "cohorts": {RUN: 1},
    "commands": {"item-1": [PARENT, RUN, "sleep 60", "2026-12-02T10:00:02.000Z", 0]},
    "ended": {"run:thread:thread-child-0:ordinal:1": "2026-12-02T09:04:00.000Z"},
    "build": {"roster": 1},
    "a later version's section": {"kept": ["as", "it", "was"]},
}


def test_a_memory_stored_before_loads_unchanged_and_round_trips():
    stored = copy.deepcopy(STORED)
    memory = Memory.from_dict(stored)
    assert memory.tasks[TASK]["status"] == "running"
    assert memory.failures["run:thread:thread-child-9:ordinal:1"] == ["thread-child-9", "Boom."]
    assert memory.others == {"a later version's section": {"kept": ["as", "it", "was"]}}
    assert memory.to_dict() == STORED
    assert json.loads(json.dumps(memory.to_dict())) == STORED
    assert list(memory.to_dict()) == list(STORED)  # the same sections, in the same order
    # The stored sections themselves, not copies: a change shows in both.
    assert memory.tasks is stored["tasks"]
    assert Memory.from_dict(memory.to_dict()).to_dict() == STORED


def test_a_memory_lacking_sections_starts_them_empty():
    assert list(Mapper().memory) == [
        "tasks",
        "children",
        "natives",
        "rosters",
        "departed",
        "messages",
        "runs",
        "texts",
        "pending",
        "transfers",
        "errors",
        "failures",
        "classes",
        "requests",
        "cohorts",
        "commands",
        "ended",
        "build",
    ]
    assert list(SECTIONS) == list(Mapper().memory)
    assert Mapper({"build": {"roster": 1}}).memory == {
        **{name: {} for name in SECTIONS},
        "build": {"roster": 1},
    }


def row(sequence: int, event_type: str, payload: dict, stream: str) -> Row:
    return Row(sequence, f"e{sequence}", "thread", stream, event_type, None, payload, {}, 2, None)


def test_following_goes_on_from_a_memory_stored_before():
    """The task known as running finishes: reported once; kept from before `told` was,
    it is told again with the id its first telling had (a duplicate, not a double). The
    held run is requested once its start message is read."""
    mapper = Mapper(json.loads(json.dumps(STORED)))
    events = mapper.map_rows(
        [
            row(
                1,
                "subagent.updated",
                {
                    "id": TASK,
                    "threadId": PARENT,
                    "origin": "app_owned",
                    "runId": RUN,
                    "childThreadId": CHILD,
                    "status": "completed",
                    "result": "All done.",
                    "startedAt": "2026-12-02T10:00:01.000Z",
                    "completedAt": "2026-12-02T10:05:00.000Z",
                    "updatedAt": "2026-12-02T10:05:00.000Z",
                },
                PARENT,
            ),
            row(
                2,
                "message.updated",
                {
                    "id": "msg-later",
                    "threadId": PARENT,
                    "role": "user",
                    "text": "And then?",
                    "createdAt": "2026-12-02T10:00:03.000Z",
                    "updatedAt": "2026-12-02T10:00:03.000Z",
                },
                PARENT,
            ),
        ]
    )
    assert [(e["type"], e["data"].get("status")) for e in events] == [
        ("task.delegated", None),
        ("task.reported", "completed"),
        ("run.requested", None),
    ]
    assert events[0]["id"] == event_id("task.delegated", TASK) + ":child:" + digest(CHILD)
    assert events[0]["at"] == "2026-12-02T10:00:01.000Z"
    assert events[1]["data"]["summary"] == "All done."
    assert events[2]["data"]["trigger"] == {"kind": "message"}
    memory = mapper.memory
    assert memory["tasks"][TASK]["status"] == "completed"
    assert memory["pending"] == {}
    assert memory["a later version's section"] == {"kept": ["as", "it", "was"]}
    assert Mapper(json.loads(json.dumps(memory))).memory == memory
