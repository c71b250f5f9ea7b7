/* cmd_diff.c: not written yet. */
#include "cli.h"

#include <stdio.h>

int pdk_cmd_diff(int argc, char **argv)
{
    fprintf(stderr, "paddock diff: not available in this build yet\n");
    return PDK_EXIT_FAILED;
}
