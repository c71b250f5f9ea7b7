/* cmd_run.c: not written yet. */
#include "cli.h"

#include <stdio.h>

int pdk_cmd_run(int argc, char **argv)
{
    fprintf(stderr, "paddock run: not available in this build yet\n");
    return PDK_EXIT_FAILED;
}
