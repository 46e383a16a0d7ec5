"""The palace: wings hold rooms, rooms hold drawers, drawers hold verbatim memories."""
