"""The T3 Code connector: follows T3's state database and acts through its WebSocket API."""
