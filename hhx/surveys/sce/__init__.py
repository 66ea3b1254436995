"""NY Fed Survey of Consumer Expectations readers: the public microdata (core and topical
modules) and the Fuster-Zafar housing-financing experiment file."""
