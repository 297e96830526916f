"""The subject app's widgets: a choice among the action space, a probability slider, the r_t form."""
