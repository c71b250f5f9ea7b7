/* landlock.c: not written yet. */
