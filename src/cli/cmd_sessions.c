/* cmd_sessions.c: not written yet. */
#include "cli.h"

#include <stdio.h>

int pdk_cmd_sessions(int argc, char **argv)
{
    fprintf(stderr, "paddock sessions: not available in this build yet\n");
    return PDK_EXIT_FAILED;
}
