"""The demo: a simulated orchestrator fleet (`fleet.py`), the answers it gives to
Supervisor's actions (`answers.py`) and the `simulate` command that sends both. Not a
connector: it stands where an orchestrator would, outside Supervisor."""
