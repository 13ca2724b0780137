"""Private: how a run executes (docs/ARCHITECTURE.md, "Layers"): the resume journal of
finished episodes and their parallel execution (:mod:`.journal`), and sharded runs that
meet in that journal (:mod:`.shards`). Used by ``python -m analysis.run`` only.
"""
