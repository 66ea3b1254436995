"""Decennial Census (IPUMS USA) reader and its mapping tables."""
