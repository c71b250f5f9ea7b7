/* commit.c: not written yet. */
