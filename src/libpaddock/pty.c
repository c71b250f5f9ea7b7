/* pty.c: not written yet. */
