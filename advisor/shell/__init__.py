"""The shell: the command line (wiring only), the dialogue, memos, sweeps, wording and units. The only
layer that talks to terminals; imports every layer below (see README.md beside this file)."""
