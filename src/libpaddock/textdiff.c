/* textdiff.c: not written yet. */
