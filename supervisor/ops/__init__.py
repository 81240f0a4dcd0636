"""Running Supervisor by hand: the management commands (`up`, `create_source`,
`create_user`, `follow_t3`, `prune`, `replay`, `report`), each a thin shell over a
module here that tests call directly."""
