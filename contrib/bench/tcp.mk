# (fragment: filled by its part)
