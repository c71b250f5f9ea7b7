/* seccomp.c: not written yet. */
