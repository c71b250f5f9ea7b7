/* diffrender.c: not written yet. */
