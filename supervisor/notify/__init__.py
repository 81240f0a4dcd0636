"""Alerts leaving Supervisor: channels, routes, grouping, follow-up and the outbox."""
