"""How rows are written, locked and leased; which storage errors a retry cures.

Imports the models and foundations."""
