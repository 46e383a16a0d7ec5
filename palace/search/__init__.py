"""Search: lexical, semantic and hybrid rankings over derived indexes, in scope and in time."""
