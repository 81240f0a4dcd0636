"""The embedded broker: a worker polling the queue never takes a half-written message."""

import threading

from kombu import Connection

from supervisor.celery import app


def test_the_embedded_broker_is_the_atomic_filesystem_transport(settings):
    if settings.CELERY_BROKER_URL.startswith("filesystem"):
        with app.connection_for_write() as conn:
            assert type(conn.transport).__module__ == "supervisor.broker"


def test_a_reader_racing_the_writer_reads_every_message_whole(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    (tmp_path / "control").mkdir()
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(tmp_path / "processed"),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    total, got, errors = 1500, [], []
    done = threading.Event()

    def read():
        with Connection(transport="supervisor.broker:Transport", transport_options=options) as c:
            queue = c.SimpleQueue("race")
            while len(got) < total and not done.is_set():
                try:
                    message = queue.get(timeout=0.01)
                except queue.Empty:
                    continue
                except Exception as exc:  # a half-written file: what this guards against
                    errors.append(exc)
                    return
                got.append(message.payload["n"])
                message.ack()

    with Connection(transport="supervisor.broker:Transport", transport_options=options) as c:
        # Bound before the reader starts: threads of one process share kombu's memory of
        # bindings, so the reader's binding would otherwise let the writer skip its own.
        queue = c.SimpleQueue("race")
        reader = threading.Thread(target=read)
        reader.start()
        for n in range(total):
            queue.put({"n": n, "pad": "x" * 2000})
    reader.join(60)
    done.set()
    assert not errors, errors
    assert sorted(got) == list(range(total))
