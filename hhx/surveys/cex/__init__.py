"""BLS Consumer Expenditure Survey readers: Interview (FMLI) and Diary packages."""
