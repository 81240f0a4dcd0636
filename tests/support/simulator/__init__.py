"""The in-process simulator connector, for tests only: actions answered by a simulated
orchestrator inside the test's own process (tests/conftest.py registers it)."""
