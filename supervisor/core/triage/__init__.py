"""Who looks after what, and what is silenced.

Imports flags, access and below."""
