/* sandbox_child.c: not written yet. */
