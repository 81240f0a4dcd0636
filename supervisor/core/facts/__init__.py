"""What is true of a task: the snapshot, its loading, ownership (`owning`, and
`ownership` which every rule reads), and the task's reading (`reading`): every handing to
the parent, whether and how it reached it, the latest result, in each meaning.

Imports the store, the contract and the models."""
