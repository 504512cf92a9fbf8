"""Part C: object graphs, reproducing the pysafe-pickle performance page."""
