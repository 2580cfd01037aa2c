"""Pure rules and values: the record model, merging, the graph, outcomes, errors. Imports nothing above it, no click, no rich."""
