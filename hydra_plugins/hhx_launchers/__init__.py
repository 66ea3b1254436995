"""hhx's Hydra launchers (Hydra finds plugins only under the `hydra_plugins` namespace): SLURM and
Ray launchers that give each job the resources of its own model (hhx/sweeps/resources.py)."""
