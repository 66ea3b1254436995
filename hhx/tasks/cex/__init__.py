"""CEX task builders: the Interview panel tasks and the Diary Social Security payment task."""
