"""Task builders of the SCE family (13 tasks); shared mechanics in `hhx.tasks.sce.common`."""
