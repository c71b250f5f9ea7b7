/* doctor.c: not written yet. */
