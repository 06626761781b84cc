"""Scheduling of index and consolidation runs: the APScheduler daemon, the nightly window and
backfill round-robin, per-agent locks, and cron/launchd/systemd units.

Imports nothing of ours: `consolidate` hands it the functions to run (see schedules.runner.Jobs).
Kept free of imports so that `schedules.lock` stays cheap.
"""
