"""The knowledge graph derived from drawers: entities, mentions and relationships."""
