"""Task definitions (registry) and task builders: one builder module per task."""
