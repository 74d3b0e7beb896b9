"""The fidelity matrix (issue 41): every writer x every reader, one conversation."""
