"""IPUMS CPS Basic Monthly reader, its code tables, and the state UI-policy file."""
