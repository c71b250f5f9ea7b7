/* changes.c: not written yet. */
