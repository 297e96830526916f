"""Controls of the instrument itself: known effects the toolkit must detect, and nulls it must not.

* :mod:`pipeline.controls.turpin`: Turpin et al. (2023)'s suggested-answer effect on the project's own
  multiple-choice items, scored through ``trb run`` (the Φ-free figures of Track 1) and against a direct
  transformers computation, with a neutral sentence of the same length as its null.
"""
