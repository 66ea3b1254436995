"""The leaderboard stage: paired bootstrap, average rank, the paper's analyses, figures, report.

Modules, in data-flow order: collect (find and select evaluate runs), examples (align one task's
answers on common rows), metrics (official metrics as weighted sums), bootstrap (paired
resampling), rank (average rank with ties), analyses (bias, persistence, cutoff, over time),
tables (all of it as data frames), figures, report (Markdown/HTML), stage (`run(cfg)`).
"""
