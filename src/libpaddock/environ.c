/* environ.c: not written yet. */
