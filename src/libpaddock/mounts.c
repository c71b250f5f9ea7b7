/* mounts.c: not written yet. */
