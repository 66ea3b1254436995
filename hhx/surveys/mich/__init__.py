"""University of Michigan Surveys of Consumers reader and its mapping tables."""
