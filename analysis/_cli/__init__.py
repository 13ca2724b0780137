"""Private: the commands' implementations (docs/ARCHITECTURE.md, "Layers").

``python -m analysis.<command>`` runs a one-line entry point that calls ``main`` here.
Also the configuration's keys and checks (:mod:`.config_check`), the Hydra glue
(:mod:`.hydra_glue`: the only package that imports Hydra), output folders
(:mod:`.out_dir`) and the figure process of ``tables`` (:mod:`.figure_worker`).
"""
