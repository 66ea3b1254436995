"""Survey readers: official public file formats -> clean parquet intermediates, grouped by family
(cps/ cex/ sce/ psid/ mich/ census/ macro/; one builder module per source, named in
conf/survey/<source>.yaml), with the seeded generators of their raw files in synthetic/<family>/.
Shared here: base (what a builder returns), registry (the sources and their dependencies),
freshness (when to rebuild), compressed (damaged archives)."""
