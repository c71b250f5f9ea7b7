/* cmd_discard.c: not written yet. */
#include "cli.h"

#include <stdio.h>

int pdk_cmd_discard(int argc, char **argv)
{
    fprintf(stderr, "paddock discard: not available in this build yet\n");
    return PDK_EXIT_FAILED;
}
