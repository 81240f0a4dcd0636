"""What is true of a task: the snapshot, its loading, ownership, what reached the parent.

Imports the store, the contract and the models."""
