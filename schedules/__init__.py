"""Scheduling of index and consolidation runs (placeholder; filled by the schedules work)."""
