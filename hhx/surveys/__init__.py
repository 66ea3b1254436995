"""Survey readers: official public file formats -> clean parquet intermediates (one module per source)."""
