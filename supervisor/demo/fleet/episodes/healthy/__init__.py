"""The healthy shapes of an episode: work that opens no flag, mixed with the failures so
that the rules must tell them apart. One module per shape, each with `EPISODE` (its
weight among the healthy ones) and its `flow`."""
