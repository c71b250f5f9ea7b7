/* session.c: not written yet. */
