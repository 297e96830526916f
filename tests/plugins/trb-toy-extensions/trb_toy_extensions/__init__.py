"""A toy track (97: how much probability the model puts on the planned action of r') and a toy runner (scores the
parts in reverse order, in this process)."""
