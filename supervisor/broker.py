"""Celery's filesystem transport, with each message written whole before it appears.

Kombu's filesystem transport creates the message file in the queue folder and then
writes it; a worker polling the folder can take the file in between, read nothing, and
stop with "Unrecoverable error: JSONDecodeError". Here a message is written under a
name no queue matches and renamed into place, which is atomic on one filesystem.
"""

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
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


class Transport(filesystem.Transport):
    Channel = Channel
