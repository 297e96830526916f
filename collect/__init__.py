"""``trb-collect``: record real paired-counterfactual sessions from human subjects (a terminal or a browser)."""
