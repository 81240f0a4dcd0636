"""What a lost channel layer raises, and the code a socket is closed with then.

The in-memory layer cannot be lost; Redis can (restarted, unreachable, silent). A
socket whose layer failed cannot be told of changes or of its session's end any more:
it is closed with 4503 (ours: "the service is away, try again"), on which the page
reconnects after a few seconds and resumes from its cursor, so nothing is missed. Not
1013 ("try again later"): the web server's WebSocket library lets an application close
only with 1000 or 3000 to 4999, and drops any other code without a word. One warning
line, not a traceback: it is an outage of a service, not a fault of this code.
"""

from __future__ import annotations

from redis.exceptions import RedisError

LAYER_LOST = 4503
# A pooled connection's socket raises OSError (ConnectionResetError, TimeoutError) when
# redis-py does not wrap it.
LAYER_ERRORS = (RedisError, OSError)
