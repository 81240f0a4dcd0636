"""Celery's filesystem transport, with each file written whole before it appears.

Kombu's filesystem transport creates a file and then writes it: a worker polling the
queue folder can take a message file in between, read nothing, and stop with
"Unrecoverable error: JSONDecodeError"; a publisher can likewise read an exchange's
binding table while a starting worker is creating it. Here a message is written under a
name no queue matches and renamed into place, and a new binding table is written aside
and linked into place (which fails, rather than overwrites, if another process made it
first); both are atomic on one filesystem.
"""

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Made by the first process that opens the broker, not when settings are imported.
        for folder in (self.data_folder_in, self.data_folder_out, self.processed_folder):
            os.makedirs(folder, exist_ok=True)
        self.control_folder.mkdir(parents=True, exist_ok=True)

    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".part"  # the reader takes only names ending in QUEUE.msg
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        table = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        if not table.exists():
            binding = [filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")]
            partial = table.with_name(f"{table.name}.{uuid.uuid4().hex}.part")
            partial.write_bytes(str_to_bytes(dumps(binding)))
            try:
                os.link(partial, table)
                return
            except FileExistsError:
                pass  # another process made it first: add to it under kombu's lock
            finally:
                partial.unlink(missing_ok=True)
        super()._queue_bind(exchange, routing_key, pattern, queue)


class Transport(filesystem.Transport):
    Channel = Channel
