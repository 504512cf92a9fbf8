"""Part A: wire codecs, reproducing the runner described by rustruct's performance page."""
