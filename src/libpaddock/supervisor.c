/* supervisor.c: not written yet. */
