"""Where bytes come from: the working tree, a git revision, or standard input."""
