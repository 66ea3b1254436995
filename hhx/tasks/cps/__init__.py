"""CPS task builders (IPUMS CPS Basic Monthly with the Displaced Worker Supplement).

`common` holds what the CPS tasks share (status maps, the link on CPSIDP, the common predictors,
the background paragraph); one module per task beside it.
"""
