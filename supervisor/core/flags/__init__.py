"""The flag catalogue, the only writers of flags, and how long a snooze of one may last.

Imports the facts and below."""
