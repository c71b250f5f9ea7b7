/* cmd_commit.c: not written yet. */
#include "cli.h"

#include <stdio.h>

int pdk_cmd_commit(int argc, char **argv)
{
    fprintf(stderr, "paddock commit: not available in this build yet\n");
    return PDK_EXIT_FAILED;
}
