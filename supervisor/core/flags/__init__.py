"""The flag catalogue and the only writers of flags.

Imports the facts and below."""
