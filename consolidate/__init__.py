"""reverie application: CLI, paths and settings, transcript sources, index, consolidation pipeline.

Kept free of imports: the hook path imports submodules of this package and must start on the
standard library alone.
"""
