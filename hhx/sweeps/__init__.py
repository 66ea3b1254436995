"""Grids of runs (task x model x settings) on any Hydra launcher: named task sets and per-model
cluster resources as config resolvers (grid.py, resources.py), the cell identity that lets a
rerun skip what MLflow already holds (identity.py, resume.py), the cost of a grid before it runs
(dryrun.py), and the sweep summary with its exit status (summary.py, callback.py).
"""
