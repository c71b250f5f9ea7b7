/* namespaces.c: not written yet. */
