"""The per-agent knowledge store: cards, entities, dated relations; merge, lifecycle, recall.

Never imports `consolidate`. Kept free of imports: recall runs on the standard library alone.
"""
