"""The parity suite: every host-facing rule (rules.py) run against every surface
(surfaces.py) on SQLite and PostgreSQL (test_parity.py). See docs/guarantees.md."""
