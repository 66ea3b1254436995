"""The leaderboard stage: paired bootstrap, average rank, the paper's analyses, figures, report.

Modules, in data-flow order: collect (find and select evaluate runs), examples (align one task's
answers on common rows), metrics (official metrics as weighted sums), bootstrap (paired
resampling), rank (average rank with ties), analyses (bias, persistence, cutoff, over time),
tables (all of it as data frames), best (which model is clearly best per task: the ★),
plotting (what every figure shares), diagnostics (per-task figures), figures, report
(Markdown/HTML), console (what the stage prints), stage (`run(cfg)`).
"""
