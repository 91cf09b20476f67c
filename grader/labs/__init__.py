"""One module per lab: its problems (spec, reference, visible and hidden cases)."""
