"""Macro and release-date sources: FRED-QD, CPI, the state panel (BLS LAUS, BEA SAINC,
FHFA HPI) and the release dates of the survey files."""
