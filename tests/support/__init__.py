"""What the tests share that is not a fixture: builders of events and snapshots, real
receivers and workers, the permission cast, the fake and real T3 servers' helpers, the
fault suite's servers. Fixtures stay in the conftest.py files, which import from here."""
