"""The knowledge graph's repositories: the only modules of the graph that talk to the store, one
for each of its services (`records` holds what they share)."""
