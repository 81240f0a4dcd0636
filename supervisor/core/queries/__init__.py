"""Read-side queries the pages and the API share: task lists, cursors, saved views, metrics.

Imports any room but detection."""
