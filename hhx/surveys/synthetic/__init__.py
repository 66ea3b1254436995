"""Seeded synthetic raw survey files in the official formats, for demos and tests.

Every generator writes a `<file>.synthetic.json` sidecar next to its output so that builds and
reports can tag results as synthetic: they are never findings about households.
"""
