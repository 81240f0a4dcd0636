"""The demo: a simulated orchestrator fleet (`fleet/`: an engine, and one episode module
per failure beside `core/rules`' one rule per kind), the answers it gives to
Supervisor's actions (`answers.py`) and the `simulate` command that sends both. Not a
connector: it stands where an orchestrator would, outside Supervisor."""
