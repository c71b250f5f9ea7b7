/* cgroup.c: not written yet. */
