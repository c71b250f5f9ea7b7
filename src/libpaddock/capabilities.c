/* capabilities.c: not written yet. */
