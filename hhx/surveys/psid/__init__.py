"""PSID readers: the PSID-SHELF long file and the Complete Main Study (Stata .dta members of
the release ZIPs)."""
